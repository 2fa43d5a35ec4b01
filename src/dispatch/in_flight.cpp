#include "outboxd/dispatch/in_flight.hpp"

namespace outboxd::dispatch {

std::string task_id_for(const store::ClaimRef& ref) {
    return std::to_string(ref.id) + "." + std::to_string(ref.token);
}

bool InFlightTable::add(InFlightTask task, Clock::time_point deadline) {
    auto task_id = task_id_for(task.ref);
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
