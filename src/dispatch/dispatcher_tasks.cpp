// The task side of the dispatcher: claimed rows placed on workers and pushed, their
// answers, heartbeats, timeouts and lost connections turned into outcomes.

#include <spdlog/spdlog.h>

#include "outboxd/dispatch/dispatcher.hpp"
#include "outboxd/dispatch/task_policy.hpp"
#include "outboxd/util/untrusted_text.hpp"

namespace outboxd::dispatch {
namespace {

using Clock = std::chrono::steady_clock;

// A heartbeating task's new progress is written at most this often.
constexpr std::chrono::seconds kProgressEvery{1};

std::chrono::milliseconds until(Clock::time_point deadline, Clock::time_point now) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now);
}

}  // namespace

std::vector<Dispatcher::Placed> Dispatcher::place(std::vector<store::OutboxRow>& rows) {
    std::vector<Placed> placed;
    placed.reserve(rows.size());
    for (auto& row : rows) {
        // Every row claimed counts, whether it is pushed or handed back.
        metrics_.claimed(row.namespace_name).Increment();
        auto* worker = registry_.pick(row, namespaces_.placement(row.namespace_name));
        if (!worker || draining_ || !registry_.reserve(*worker)) {
            // The worker left (or we began draining) between planning and claiming: hand the
            // row back untouched, without consuming an attempt.
            metrics_.rows_released_total.Increment();
            outcomes_.record(store::Outcome::release({row.id, row.claim_token}), row.namespace_name,
                             "");
            continue;
        }
        placed.push_back({worker, &row});
    }
    return placed;
}

void Dispatcher::push_all(const std::vector<Placed>& placed, Clock::time_point round_started) {
    for (const auto& [worker, row] : placed) {
        // One row's fault must not strand the others' credit: hand it back and go on.
        try {
            push(*worker, *row, round_started);
        } catch (const std::exception& error) {
            metrics_.fault("dispatch").Increment();
            spdlog::error("event=fault where=dispatch error=\"{}\"", util::log_safe(error.what()));
            const store::ClaimRef ref{row->id, row->claim_token};
            (void)in_flight_.take(task_id_for(ref), worker->session_id);
            registry_.release(worker->session_id);
            outcomes_.record(store::Outcome::release(ref), row->namespace_name, "");
        }
    }
}

void Dispatcher::push(worker::WorkerEntry& worker, store::OutboxRow& row,
                      Clock::time_point round_started) {
    const store::ClaimRef ref{row.id, row.claim_token};
    const auto& controls = namespaces_.controls(row.namespace_name);
    auto policy = task_policy(controls, row.activity_type, task_defaults_);
    // An HTTP target's own timeout is the attempt's; targets send no heartbeats.
    if (worker.task_timeout) policy = {policy.failure, *worker.task_timeout, std::nullopt, true};
    InFlightTask tracked;
    tracked.ref = ref;
    tracked.session_id = worker.session_id;
    tracked.namespace_name = row.namespace_name;
    tracked.attempt = row.attempt;
    if (row.traceparent) tracked.trace_id = util::trace_id_of(*row.traceparent);
    if (controls.ordering == store::Ordering::workflow) {
        tracked.workflow_id = row.workflow_id;
        tracked.task_queue = row.task_queue;
    }
    tracked.failure = policy.failure;
    tracked.timeout = policy.timeout;
    const auto now = Clock::now();
    auto deadline = now + policy.timeout + worker.deadline_grace;
    if (policy.heartbeat_timeout) {
        tracked.heartbeat_timeout = *policy.heartbeat_timeout;
        if (policy.timeout.count() > 0) tracked.hard_deadline = deadline;
        deadline = std::min(deadline, now + *policy.heartbeat_timeout);
        if (policy.timeout.count() == 0) deadline = now + *policy.heartbeat_timeout;
    }
    // A task that may outlive the node-wide backstop gets a durable deadline of its own.
    tracked.leased = policy.heartbeat_timeout || policy.timeout > settings_.task_timeout;
    if (tracked.leased) tracked.lease_asked = now;
    if (!in_flight_.add(std::move(tracked), deadline)) {
        // A claim token handed out twice; never expected (see OutboxSession::Commits). Hand
        // the row back rather than track two deliveries under one id.
        spdlog::error("event=duplicate_task_id task_id={}", task_id_for(ref));
        registry_.release(worker.session_id);
        outcomes_.record(store::Outcome::release(ref), row.namespace_name, "");
        return;
    }
    worker::Task task;
    task.task_id = task_id_for(ref);
    task.dispatch_key = std::move(row.dispatch_key);
    task.workflow_id = std::move(row.workflow_id);
    task.ordinal = row.ordinal;
    task.run_id = std::move(row.run_id);
    task.namespace_name = row.namespace_name;
    task.task_queue = std::move(row.task_queue);
    task.node = std::move(row.node);
    task.activity_type = std::move(row.activity_type);
    task.input_json = std::move(row.input_json);
    task.attempt = std::int64_t{row.attempt} + 1;  // one-based on the wire
    task.timeout_ms = policy.timeout.count();
    if (policy.heartbeat_timeout) task.heartbeat_timeout_ms = policy.heartbeat_timeout->count();
    task.priority = row.priority;
    task.traceparent = std::move(row.traceparent);
    if (auto refused = worker.channel->send_task(task)) {
        // No frame can carry it to this worker (e.g. a row inserted by plain SQL whose input
        // nests too deep): dead-lettered with the reason, at once, instead of failing every
        // delivery.
        (void)in_flight_.take(task.task_id, worker.session_id);
        registry_.release(worker.session_id);
        spdlog::warn("event=row_undeliverable dispatch_key=\"{}\" trace_id={} reason=\"{}\"",
                     util::log_safe(task.dispatch_key),
                     task.traceparent ? util::trace_id_of(*task.traceparent) : "",
                     util::log_safe(*refused));
        outcomes_.record(store::Outcome::fail(ref, std::move(*refused)), row.namespace_name,
                         "failed");
        return;
    }

    if (policy.heartbeat_timeout || policy.timeout > settings_.task_timeout) {
        leases_.ask({ref, lease_for(deadline, now), false, std::nullopt});
    }
    metrics_.outstanding(row.namespace_name).Increment();
    // Due -> pushed, each part on one clock: due -> claimed on the database's (visible_after
    // and claimed_at are both its instants), claimed -> pushed on this node's (from the
    // round's submission), so that no two hosts' clocks are ever compared.
    const auto due_to_claimed =
        row.claimed_at ? std::chrono::duration<double>(*row.claimed_at - row.visible_after).count()
                       : 0.0;
    const auto claimed_to_pushed =
        std::chrono::duration<double>(Clock::now() - round_started).count();
    metrics_.dispatch_latency.Observe(std::max(0.0, due_to_claimed) + claimed_to_pushed);
}

std::chrono::milliseconds Dispatcher::lease_for(Clock::time_point deadline,
                                                Clock::time_point now) const {
    // Headroom: the next ask comes a refresh later, and waits for its batch; the durable
    // deadline must not fall behind the one in memory meanwhile.
    return until(deadline, now) + lease_refresh_ + LeaseWriter::kFlushEvery;
}

void Dispatcher::untrack(const InFlightTask& task) {
    registry_.release(task.session_id);
    metrics_.outstanding(task.namespace_name).Decrement();
    if (task.lease_asked != Clock::time_point{}) leases_.forget(task.ref);
}

void Dispatcher::settle(const InFlightTask& task, SettledTask settled) {
    // Its row was cancelled already: the answer (or its absence) changes nothing.
    if (task.cancelled) return;
    if (settled.outcome.kind == store::Outcome::Kind::fail) {
        spdlog::info("event=dead_letter task_id={}.{} namespace=\"{}\" trace_id={} error=\"{}\"",
                     task.ref.id, task.ref.token, util::log_safe(task.namespace_name),
                     task.trace_id, util::log_safe(settled.outcome.error));
    }
    // Ordered delivery: a row that ended lets the next one of its workflow go; a dead letter
    // does so only where it does not block.
    if (!task.workflow_id.empty()) {
        const auto kind = settled.outcome.kind;
        const bool skip =
            namespaces_.controls(task.namespace_name).on_dead_letter == store::OnDeadLetter::skip;
        if (kind == store::Outcome::Kind::done || (kind == store::Outcome::Kind::fail && skip)) {
            settled.outcome.let_go_workflow = task.workflow_id;
            settled.outcome.let_go_task_queue = task.task_queue;
        }
    }
    outcomes_.record(std::move(settled.outcome), task.namespace_name, std::string{settled.label});
}

Answer Dispatcher::on_complete(const std::string& session_id, const std::string& task_id,
                               std::string result_json) {
    const auto task = in_flight_.take(task_id, session_id);
    if (!task) return Answer::unknown_task;
    untrack(*task);
    std::optional<std::string> kept;
    if (result_json != "null" && !result_json.empty() &&
        namespaces_.keep_results(task->namespace_name)) {
        kept = std::move(result_json);
    }
    settle(*task, completed(*task, std::move(kept)));
    if (backlog_likely_ || sweep_again_) request_sweep();
    check_drained();
    return Answer::accepted;
}

Answer Dispatcher::on_heartbeat(const std::string& session_id, const std::string& task_id,
                                std::optional<std::string> progress_json) {
    const auto now = Clock::now();
    const auto touched = in_flight_.touch(task_id, session_id, now);
    if (!touched) return Answer::unknown_task;
    metrics_.heartbeats_total.Increment();
    auto& task = *touched->task;
    // Its workflow was cancelled: told again, in case the worker missed the first cancel.
    if (task.cancelled) return Answer::unknown_task;
    // Written now and then, not per heartbeat: new progress at most every kProgressEvery,
    // and the durable deadline (with the heartbeat's time) once it is a refresh old.
    const auto progress_hash = progress_json ? std::hash<std::string>{}(*progress_json) : 0;
    const bool new_progress = progress_json && progress_hash != task.progress_hash;
    const auto since = now - task.lease_asked;
    if (task.lease_asked != Clock::time_point{} && since < lease_refresh_ &&
        !(new_progress && since >= kProgressEvery)) {
        return Answer::accepted;
    }
    task.lease_asked = now;
    if (new_progress) task.progress_hash = progress_hash;
    leases_.ask({task.ref, lease_for(touched->deadline, now), true,
                 new_progress ? std::move(progress_json) : std::nullopt});
    return Answer::accepted;
}

void Dispatcher::cancel_tasks(const std::vector<std::string>& task_ids) {
    for (const auto& task_id : task_ids) {
        auto* task = in_flight_.find(task_id);
        if (!task || task->cancelled) continue;
        task->cancelled = true;
        if (task->lease_asked != Clock::time_point{}) leases_.forget(task->ref);
        if (auto* worker = registry_.find(task->session_id); worker && worker->channel) {
            worker->channel->send_cancel(task_id, "the task's workflow was cancelled");
        }
        spdlog::info("event=task_cancelled task_id={} namespace=\"{}\" trace_id={}", task_id,
                     util::log_safe(task->namespace_name), task->trace_id);
    }
}

Answer Dispatcher::on_fail(const std::string& session_id, const std::string& task_id,
                           std::string error, bool retryable, std::chrono::milliseconds min_delay) {
    const auto task = in_flight_.take(task_id, session_id);
    if (!task) return Answer::unknown_task;
    untrack(*task);
    settle(*task, failed(*task, Failure::reported,
                         error.empty() ? "worker reported failure" : std::move(error), retryable,
                         min_delay));
    if (backlog_likely_ || sweep_again_) request_sweep();
    check_drained();
    return Answer::accepted;
}

void Dispatcher::on_worker_lost(const std::string& session_id) {
    const auto lost = in_flight_.take_session(session_id);
    for (const auto& task : lost) {
        untrack(task);
        settle(task, failed(task, Failure::lost, "worker connection lost", true));
    }
    registry_.remove(session_id);
    if (!lost.empty()) {
        spdlog::info("event=worker_lost session={} rearmed={}", session_id, lost.size());
        backlog_likely_ = true;
        request_sweep();
    }
    check_drained();
}

void Dispatcher::expire_timeouts() {
    const auto expired = in_flight_.take_expired(Clock::now());
    if (expired.empty()) return;
    for (const auto& task : expired) {
        untrack(task);
        const auto now = Clock::now();
        const bool hard =
            !task.heartbeat_timeout || (task.hard_deadline && *task.hard_deadline <= now);
        const auto limit =
            hard ? task.timeout
                 : std::chrono::duration_cast<std::chrono::milliseconds>(*task.heartbeat_timeout);
        const auto why = (hard ? "task timed out after " : "no heartbeat for ") +
                         std::to_string(limit.count()) + " ms";
        spdlog::debug("event=task_timed_out task_id={}.{} namespace=\"{}\" trace_id={}",
                      task.ref.id, task.ref.token, util::log_safe(task.namespace_name),
                      task.trace_id);
        settle(task, failed(task, Failure::timed_out, why, true));
    }
    spdlog::warn("event=tasks_timed_out count={}", expired.size());
    request_sweep();
    check_drained();
}

}  // namespace outboxd::dispatch
