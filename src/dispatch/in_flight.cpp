#include "outboxd/dispatch/in_flight.hpp"

#include <algorithm>

#include "outboxd/util/untrusted_text.hpp"

namespace outboxd::dispatch {
namespace {

using Clock = InFlightTable::Clock;

// A heartbeating task's new progress is written at most this often.
constexpr std::chrono::seconds kProgressEvery{1};

std::chrono::milliseconds until(Clock::time_point deadline, Clock::time_point now) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now);
}

}  // namespace

std::string task_id_for(const store::ClaimRef& ref) {
    return std::to_string(ref.id) + "." + std::to_string(ref.token);
}

std::optional<InFlightTable::Admission> InFlightTable::admit(
    store::OutboxRow& row, const std::string& session_id, const sinks::SinkProfile& sink,
    const store::DeliveryControls& controls, Clock::time_point now) {
    const store::ClaimRef ref{row.id, row.claim_token};
    auto policy = task_policy(controls, row.activity_type, settings_.defaults);
    // A sink's own timeout is the attempt's (an HTTP target's); such sinks send no
    // heartbeats.
    if (sink.task_timeout) policy = {policy.failure, *sink.task_timeout, std::nullopt, true};
    InFlightTask tracked;
    tracked.ref = ref;
    tracked.session_id = session_id;
    tracked.namespace_name = row.namespace_name;
    tracked.attempt = row.attempt;
    if (row.traceparent) tracked.trace_id = util::trace_id_of(*row.traceparent);
    if (controls.ordering == store::Ordering::workflow) {
        tracked.workflow_id = row.workflow_id;
        tracked.task_queue = row.task_queue;
    }
    tracked.failure = policy.failure;
    tracked.timeout = policy.timeout;
    auto deadline = now + policy.timeout + sink.deadline_grace;
    if (policy.heartbeat_timeout) {
        tracked.heartbeat_timeout = *policy.heartbeat_timeout;
        if (policy.timeout.count() > 0) tracked.hard_deadline = deadline;
        deadline = std::min(deadline, now + *policy.heartbeat_timeout);
        if (policy.timeout.count() == 0) deadline = now + *policy.heartbeat_timeout;
    }
    // A task that may outlive the node-wide backstop gets a durable deadline of its own.
    tracked.leased =
        policy.heartbeat_timeout.has_value() || policy.timeout > settings_.defaults.timeout;
    if (tracked.leased) tracked.lease_asked = now;
    const bool leased = tracked.leased;
    if (!add(std::move(tracked), deadline)) return std::nullopt;

    Admission admitted;
    auto& task = admitted.task;
    task.task_id = task_id(ref);
    task.database = settings_.database;
    task.dispatch_key = std::move(row.dispatch_key);
    task.workflow_id = std::move(row.workflow_id);
    task.ordinal = row.ordinal;
    task.run_id = std::move(row.run_id);
    task.namespace_name = row.namespace_name;
    task.task_queue = std::move(row.task_queue);
    task.node = std::move(row.node);
    task.activity_type = std::move(row.activity_type);
    task.input_json = std::move(row.input_json);
    task.attempt = std::int64_t{row.attempt} + 1;               // one-based on the wire
    task.delivery = std::max<std::int64_t>(row.deliveries, 1);  // counted by the claim
    task.timeout_ms = policy.timeout.count();
    if (policy.heartbeat_timeout) task.heartbeat_timeout_ms = policy.heartbeat_timeout->count();
    task.priority = row.priority;
    task.traceparent = std::move(row.traceparent);
    if (leased) admitted.lease = store::LeaseWrite{ref, lease_for(deadline, now), false, {}};
    return admitted;
}

std::chrono::milliseconds InFlightTable::lease_for(Clock::time_point deadline,
                                                   Clock::time_point now) const {
    // Headroom: the next ask comes a refresh later, and waits for its batch; the durable
    // deadline must not fall behind the one in memory meanwhile.
    return until(deadline, now) + settings_.lease_refresh + settings_.lease_headroom;
}

InFlightTable::Beat InFlightTable::beat(const std::string& task_id, const std::string& session_id,
                                        std::optional<std::string> progress_json,
                                        Clock::time_point now) {
    const auto touched = this->touch(task_id, session_id, now);
    if (!touched) return {};
    auto& task = *touched->task;
    if (task.cancelled) return {true, true, std::nullopt};
    // Written now and then, not per heartbeat: new progress at most every kProgressEvery,
    // and the durable deadline (with the heartbeat's time) once it is a refresh old.
    const auto progress_hash = progress_json ? std::hash<std::string>{}(*progress_json) : 0;
    const bool new_progress = progress_json && progress_hash != task.progress_hash;
    const auto since = now - task.lease_asked;
    if (task.lease_asked != Clock::time_point{} && since < settings_.lease_refresh &&
        !(new_progress && since >= kProgressEvery)) {
        return {true, false, std::nullopt};
    }
    task.lease_asked = now;
    if (new_progress) task.progress_hash = progress_hash;
    return {true, false,
            store::LeaseWrite{task.ref, lease_for(touched->deadline, now), true,
                              new_progress ? std::move(progress_json) : std::nullopt}};
}

std::string InFlightTable::why_expired(const InFlightTask& task, Clock::time_point now) {
    const bool hard = !task.heartbeat_timeout || (task.hard_deadline && *task.hard_deadline <= now);
    const auto limit =
        hard ? task.timeout
             : std::chrono::duration_cast<std::chrono::milliseconds>(*task.heartbeat_timeout);
    return (hard ? "task timed out after " : "no heartbeat for ") + std::to_string(limit.count()) +
           " ms";
}

bool InFlightTable::add(InFlightTask task, Clock::time_point deadline) {
    auto task_id = this->task_id(task.ref);
    const auto [entry, added] = tasks_.try_emplace(task_id, Entry{std::move(task), {}});
    if (!added) return false;
    entry->second.deadline = deadlines_.emplace(deadline, std::move(task_id));
    return true;
}

InFlightTask InFlightTable::remove(std::unordered_map<std::string, Entry>::iterator it) {
    InFlightTask task = std::move(it->second.task);
    deadlines_.erase(it->second.deadline);
    tasks_.erase(it);
    return task;
}

std::optional<InFlightTask> InFlightTable::take(const std::string& task_id,
                                                const std::string& session_id) {
    const auto it = tasks_.find(task_id);
    if (it == tasks_.end() || it->second.task.session_id != session_id) return std::nullopt;
    return remove(it);
}

std::optional<InFlightTable::Touched> InFlightTable::touch(const std::string& task_id,
                                                           const std::string& session_id,
                                                           Clock::time_point now) {
    const auto it = tasks_.find(task_id);
    if (it == tasks_.end() || it->second.task.session_id != session_id) return std::nullopt;
    auto& [task, deadline] = it->second;
    if (task.heartbeat_timeout && !task.cancelled) {
        auto next = now + *task.heartbeat_timeout;
        if (task.hard_deadline) next = std::min(next, *task.hard_deadline);
        if (next > deadline->first) {
            deadlines_.erase(deadline);
            deadline = deadlines_.emplace(next, task_id);
        }
    }
    return Touched{&task, deadline->first};
}

InFlightTask* InFlightTable::find(const std::string& task_id) {
    const auto it = tasks_.find(task_id);
    return it == tasks_.end() ? nullptr : &it->second.task;
}

std::vector<InFlightTask> InFlightTable::take_expired(Clock::time_point now) {
    std::vector<InFlightTask> expired;
    while (!deadlines_.empty() && deadlines_.begin()->first <= now) {
        expired.push_back(remove(tasks_.find(deadlines_.begin()->second)));
    }
    return expired;
}

std::vector<InFlightTask> InFlightTable::take_session(const std::string& session_id) {
    std::vector<InFlightTask> held;
    for (auto it = tasks_.begin(); it != tasks_.end();) {
        const auto next = std::next(it);
        if (it->second.task.session_id == session_id) held.push_back(remove(it));
        it = next;
    }
    return held;
}

std::vector<InFlightTask> InFlightTable::take_all() {
    std::vector<InFlightTask> all;
    all.reserve(tasks_.size());
    while (!tasks_.empty()) all.push_back(remove(tasks_.begin()));
    return all;
}

SettledTask completed(const InFlightTask& task, std::optional<std::string> result) {
    return {store::Outcome::done(task.ref, std::move(result)), "done"};
}

SettledTask failed(const InFlightTask& task, Failure how, std::string error, bool retryable,
                   std::chrono::milliseconds min_delay) {
    const auto& policy = task.failure;
    if (!retryable || std::int64_t{task.attempt} + 1 >= policy.max_attempts) {
        return {store::Outcome::fail(task.ref, std::move(error)), "failed"};
    }
    if (how == Failure::lost) {
        return {store::Outcome::retry(task.ref, std::chrono::milliseconds{0}, std::move(error)),
                "failover"};
    }
    const auto delay = std::max(policy.backoff.delay_for(task.attempt), min_delay);
    return {store::Outcome::retry(task.ref, delay, std::move(error)), "retry"};
}

}  // namespace outboxd::dispatch
