#pragma once

// The tasks a node has pushed and not yet settled: which worker holds each, until when, and
// what an answer, a timeout or a lost connection turns it into.
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

#include "outboxd/store/outbox_row.hpp"
#include "outboxd/util/backoff.hpp"

namespace outboxd::dispatch {

// "<row id>.<claim token>": names one claim of one row on the wire.
[[nodiscard]] std::string task_id_for(const store::ClaimRef& ref);

struct FailurePolicy {
    std::int32_t max_attempts = 10;
    util::Backoff backoff;
};

struct InFlightTask {
    using Clock = std::chrono::steady_clock;

    store::ClaimRef ref;
    std::string session_id;  // the worker that holds it
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
    // Its durable deadline (TaskLeases): whether the row gets one, and when one was last
    // asked for (a heartbeat asks again only some time later, or with new progress).
    bool leased = false;
    Clock::time_point lease_asked{};
    std::size_t progress_hash = 0;
    bool cancelled = false;  // its row was settled without it; its answer writes nothing
};

class InFlightTable {
public:
    using Clock = std::chrono::steady_clock;

    // Tracks `task` under its task id until `deadline`. False (and nothing changes) when the
    // id is tracked already.
    [[nodiscard]] bool add(InFlightTask task, Clock::time_point deadline);
    // The task `task_id` if the worker of `session_id` holds it (an answer from it), removed.
    [[nodiscard]] std::optional<InFlightTask> take(const std::string& task_id,
                                                   const std::string& session_id);
    // A heartbeat from the worker of `session_id`: the task, with its deadline moved when it
    // is a heartbeating one. None when that worker does not hold it.
    struct Touched {
        InFlightTask* task = nullptr;
        Clock::time_point deadline;
    };
    [[nodiscard]] std::optional<Touched> touch(const std::string& task_id,
                                               const std::string& session_id,
                                               Clock::time_point now);
    // The task `task_id`, whoever holds it (nullptr: none), left in place.
    [[nodiscard]] InFlightTask* find(const std::string& task_id);
    // Removes and returns the tasks whose deadline is at or before `now`, earliest first.
    [[nodiscard]] std::vector<InFlightTask> take_expired(Clock::time_point now);
    // Removes and returns the tasks the worker of `session_id` holds.
    [[nodiscard]] std::vector<InFlightTask> take_session(const std::string& session_id);
    // Removes and returns every task.
    [[nodiscard]] std::vector<InFlightTask> take_all();

    [[nodiscard]] std::size_t size() const { return tasks_.size(); }
    [[nodiscard]] bool empty() const { return tasks_.empty(); }

private:
    using Deadlines = std::multimap<Clock::time_point, std::string>;
    struct Entry {
        InFlightTask task;
        Deadlines::iterator deadline;
    };
    InFlightTask remove(std::unordered_map<std::string, Entry>::iterator it);

    std::unordered_map<std::string, Entry> tasks_;  // by task id
    Deadlines deadlines_;
};

// How a task that did not complete ends.
enum class Failure {
    reported,   // the worker answered fail
    timed_out,  // no answer within the task timeout
    lost,       // the worker's connection is gone, or the node gave the task up (drain)
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
