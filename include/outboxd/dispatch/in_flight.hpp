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

struct InFlightTask {
    store::ClaimRef ref;
    std::string session_id;  // the worker that holds it
    std::string namespace_name;
    std::int32_t attempt = 0;  // zero-based attempt this claim is running (the stored value)
    // Of namespaces with ordered delivery only (empty otherwise): what its end lets go.
    std::string workflow_id;
    std::string task_queue;
    std::string trace_id;  // of the row's traceparent, for log lines about it; empty: none
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

struct FailurePolicy {
    std::int32_t max_attempts = 10;
    util::Backoff backoff;
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
[[nodiscard]] SettledTask failed(const InFlightTask& task, Failure how, std::string error,
                                 bool retryable, const FailurePolicy& policy,
                                 std::chrono::milliseconds min_delay = {});

}  // namespace outboxd::dispatch
