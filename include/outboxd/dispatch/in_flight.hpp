#pragma once

// The tasks a node has pushed and not yet settled, and everything decided about one from the
// moment it is admitted: the policy it runs under (its activity's attempts, backoff, timeout
// and heartbeat timeout, or its sink's own timeout), its deadline, its durable deadline
// (lease) and when to write it again, which sink holds it, and what an answer, a timeout or
// a lost connection turns it into.
//
// Pure: no I/O, time is passed in. Loop thread only.

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "outboxd/dispatch/task_policy.hpp"
#include "outboxd/sinks/sink.hpp"
#include "outboxd/store/outbox_row.hpp"
#include "outboxd/store/outcome_store.hpp"

namespace outboxd::dispatch {

// "<row id>.<claim token>": names one claim of one row on the wire.
[[nodiscard]] std::string task_id_for(const store::ClaimRef& ref);

struct InFlightTask {
    using Clock = std::chrono::steady_clock;

    store::ClaimRef ref;
    std::string session_id;  // the sink that holds it
    std::string namespace_name;
    std::int32_t attempt = 0;  // zero-based attempt this claim is running (the stored value)
    // Of namespaces with ordered delivery only (empty otherwise): what its end lets go.
    std::string workflow_id;
    std::string task_queue;
    std::string trace_id;   // of the row's traceparent, for log lines about it; empty: none
    FailurePolicy failure;  // its activity's attempts and backoff
    std::chrono::milliseconds timeout{0};  // the attempt's limit (0: none, heartbeats only)
    // A heartbeating task: each heartbeat moves its deadline to now + this, never past
    // `hard_deadline` (its total limit, when it has one).
    std::optional<Clock::duration> heartbeat_timeout;
    std::optional<Clock::time_point> hard_deadline;
    // Its durable deadline: whether the row gets one, and when one was last asked for (a
    // heartbeat asks again only some time later, or with new progress).
    bool leased = false;
    Clock::time_point lease_asked{};
    std::size_t progress_hash = 0;
    bool cancelled = false;  // its row was settled without it; its answer writes nothing
};

struct InFlightSettings {
    TaskDefaults defaults;  // the node's attempts, backoff and task timeout
    // How often a heartbeating task's durable deadline is written at most (without new
    // progress).
    std::chrono::milliseconds lease_refresh{1000};
    // How much later than the deadline in memory a durable deadline is written: the next
    // write waits for its batch (LeaseWriter's flush).
    std::chrono::milliseconds lease_headroom{500};
    // Appended to every task id of this table (the database's tag, engine/directory.hpp):
    // empty for the first database.
    std::string task_id_suffix;
    std::string database = "default";  // the name its tasks carry
    std::size_t database_index = 0;    // its index among the node's (the sinks' credit shares)
};

class InFlightTable {
public:
    using Clock = std::chrono::steady_clock;

    InFlightTable() = default;
    explicit InFlightTable(InFlightSettings settings) : settings_(std::move(settings)) {}

    // A claimed row taken for the sink of `session_id` (whose credit it has taken), as its
    // task: its task fields are moved out of `row` (id, token, namespace stay). None when
    // its task id is tracked already (a claim token handed out twice; never expected).
    struct Admission {
        sinks::Task task;
        // Its durable deadline, to write now: a task that may outlive the node-wide stale
        // claim backstop (a heartbeating one, or a timeout past the node's) gets one.
        std::optional<store::LeaseWrite> lease;
    };
    [[nodiscard]] std::optional<Admission> admit(store::OutboxRow& row,
                                                 const std::string& session_id,
                                                 const sinks::SinkProfile& sink,
                                                 const store::DeliveryControls& controls,
                                                 Clock::time_point now);

    // Tracks `task` under its task id until `deadline`. False (and nothing changes) when the
    // id is tracked already.
    [[nodiscard]] bool add(InFlightTask task, Clock::time_point deadline);
    // The task `task_id` if the sink of `session_id` holds it (an answer from it), removed.
    [[nodiscard]] std::optional<InFlightTask> take(const std::string& task_id,
                                                   const std::string& session_id);
    // A heartbeat from the sink of `session_id`: the task, with its deadline moved when it
    // is a heartbeating one. None when that sink does not hold it.
    struct Touched {
        InFlightTask* task = nullptr;
        Clock::time_point deadline;
    };
    [[nodiscard]] std::optional<Touched> touch(const std::string& task_id,
                                               const std::string& session_id,
                                               Clock::time_point now);
    // A heartbeat with optional new progress: whether the task is out to that sink, whether
    // it was cancelled meanwhile, and the durable deadline to write now, if one is due (at
    // most every lease_refresh, or with new progress at most every second).
    struct Beat {
        bool held = false;
        bool cancelled = false;
        std::optional<store::LeaseWrite> lease;
    };
    [[nodiscard]] Beat beat(const std::string& task_id, const std::string& session_id,
                            std::optional<std::string> progress_json, Clock::time_point now);
    // The task `task_id`, whoever holds it (nullptr: none), left in place.
    [[nodiscard]] InFlightTask* find(const std::string& task_id);
    // Removes and returns the tasks whose deadline is at or before `now`, earliest first.
    [[nodiscard]] std::vector<InFlightTask> take_expired(Clock::time_point now);
    // Removes and returns the tasks the sink of `session_id` holds.
    [[nodiscard]] std::vector<InFlightTask> take_session(const std::string& session_id);
    // Removes and returns every task.
    [[nodiscard]] std::vector<InFlightTask> take_all();

    // Why an expired task timed out at `now`: its total limit, or its heartbeats.
    [[nodiscard]] static std::string why_expired(const InFlightTask& task, Clock::time_point now);
    // The task id this table gives the claim `ref`.
    [[nodiscard]] std::string task_id(const store::ClaimRef& ref) const {
        return task_id_for(ref) + settings_.task_id_suffix;
    }

    [[nodiscard]] std::size_t size() const { return tasks_.size(); }
    [[nodiscard]] bool empty() const { return tasks_.empty(); }

private:
    using Deadlines = std::multimap<Clock::time_point, std::string>;
    struct Entry {
        InFlightTask task;
        Deadlines::iterator deadline;
    };
    InFlightTask remove(std::unordered_map<std::string, Entry>::iterator it);
    // The durable deadline for a task whose deadline in memory is `deadline`.
    [[nodiscard]] std::chrono::milliseconds lease_for(Clock::time_point deadline,
                                                      Clock::time_point now) const;

    InFlightSettings settings_;
    std::unordered_map<std::string, Entry> tasks_;  // by task id
    Deadlines deadlines_;
};

// How a task that did not complete ends.
enum class Failure {
    reported,   // the sink answered fail
    timed_out,  // no answer within the task timeout
    lost,       // the sink is gone, or the node gave the task up (drain)
};

// An outcome to record, with the outboxd_outcomes_total label it counts under.
struct SettledTask {
    store::Outcome outcome;
    std::string_view label;  // "done", "retry", "failover" or "failed"
};

// `result`: JSON text to keep as the row's result (none: keep none).
[[nodiscard]] SettledTask completed(const InFlightTask& task,
                                    std::optional<std::string> result = std::nullopt);
// A retryable failure retries while attempts are left: after the backoff of this attempt,
// or at once (keeping the row's place) when the connection was lost, which still consumes
// the attempt so that worker churn stays bounded by max_attempts. Anything else, or the
// last attempt, is a dead letter.
// A retry waits `min_delay` when that is longer than the backoff.
// The policy is the task's own (its activity's).
[[nodiscard]] SettledTask failed(const InFlightTask& task, Failure how, std::string error,
                                 bool retryable, std::chrono::milliseconds min_delay = {});

}  // namespace outboxd::dispatch
