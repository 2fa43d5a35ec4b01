#include "outboxd/dispatch/task_board.hpp"

#include <spdlog/spdlog.h>

#include "outboxd/util/untrusted_text.hpp"

namespace outboxd::dispatch {

using sinks::Answer;

TaskBoard::TaskBoard(const boost::asio::any_io_executor& loop, worker::WorkerRegistry& registry,
                     NamespaceCache& namespaces, TaskWrites& writes,
                     metrics::DatabaseMetrics& metrics, InFlightSettings settings,
                     std::chrono::milliseconds scan_period, util::SteadyNow now,
                     std::function<void()> expired)
    : registry_(registry),
      namespaces_(namespaces),
      writes_(writes),
      metrics_(metrics),
      now_(std::move(now)),
      db_(settings.database_index),
      in_flight_(std::move(settings)),
      expired_(std::move(expired)),
      timeout_timer_(
          loop, scan_period,
          [this] {
              if (expire() > 0) expired_();
          },
          metrics.fault("timer")) {}

void TaskBoard::release(const store::OutboxRow& row) {
    metrics_.rows_released_total.Increment();
    writes_.record(store::Outcome::release({row.id, row.claim_token}), row.namespace_name, "");
}

void TaskBoard::push_all(const std::vector<Placed>& placed, Clock::time_point round_started) {
    for (const auto& [sink, row] : placed) {
        // One row's fault must not strand the others' credit: hand it back and go on.
        try {
            push(*sink, *row, round_started);
        } catch (const std::exception& error) {
            metrics_.fault("dispatch").Increment();
            spdlog::error("event=fault where=dispatch database={} error=\"{}\"",
                          metrics_.database(), util::log_safe(error.what()));
            const store::ClaimRef ref{row->id, row->claim_token};
            (void)in_flight_.take(in_flight_.task_id(ref), sink->session_id);
            registry_.release(sink->session_id, db_);
            writes_.record(store::Outcome::release(ref), row->namespace_name, "");
        }
    }
}

void TaskBoard::push(worker::WorkerEntry& sink, store::OutboxRow& row,
                     Clock::time_point round_started) {
    const store::ClaimRef ref{row.id, row.claim_token};
    const auto now = now_();
    auto admitted = in_flight_.admit(row, sink.session_id, sink.profile,
                                     namespaces_.controls(row.namespace_name), now);
    if (!admitted) {
        // A claim token handed out twice; never expected (see OutboxSession::Commits). Hand
        // the row back rather than track two deliveries under one id.
        spdlog::error("event=duplicate_task_id database={} task_id={}", metrics_.database(),
                      in_flight_.task_id(ref));
        registry_.release(sink.session_id, db_);
        writes_.record(store::Outcome::release(ref), row.namespace_name, "");
        return;
    }
    const auto& task = admitted->task;
    if (auto refused = sink.sink->send_task(task)) {
        // No frame can carry it to this sink (e.g. a row inserted by plain SQL whose input
        // nests too deep): dead-lettered with the reason, at once, instead of failing every
        // delivery.
        (void)in_flight_.take(task.task_id, sink.session_id);
        registry_.release(sink.session_id, db_);
        spdlog::warn(
            "event=row_undeliverable database={} dispatch_key=\"{}\" trace_id={} reason=\"{}\"",
            metrics_.database(), util::log_safe(task.dispatch_key),
            task.traceparent ? util::trace_id_of(*task.traceparent) : "", util::log_safe(*refused));
        writes_.record(store::Outcome::fail(ref, std::move(*refused)), row.namespace_name,
                       "failed");
        return;
    }
    if (admitted->lease) writes_.ask_lease(std::move(*admitted->lease));
    metrics_.outstanding(row.namespace_name).Increment();
    // Due -> pushed, each part on one clock: due -> claimed on the database's (visible_after
    // and claimed_at are both its instants), claimed -> pushed on this node's (from the
    // round's submission), so that no two hosts' clocks are ever compared.
    const auto due_to_claimed =
        row.claimed_at ? std::chrono::duration<double>(*row.claimed_at - row.visible_after).count()
                       : 0.0;
    const auto claimed_to_pushed = std::chrono::duration<double>(now_() - round_started).count();
    metrics_.dispatch_latency.Observe(std::max(0.0, due_to_claimed) + claimed_to_pushed);
}

void TaskBoard::untrack(const InFlightTask& task) {
    registry_.release(task.session_id, db_);
    metrics_.outstanding(task.namespace_name).Decrement();
    if (task.lease_asked != Clock::time_point{}) writes_.forget_lease(task.ref);
}

void TaskBoard::settle(const InFlightTask& task, SettledTask settled) {
    // Its row was cancelled already: the answer (or its absence) changes nothing.
    if (task.cancelled) return;
    if (settled.outcome.kind == store::Outcome::Kind::fail) {
        spdlog::info(
            "event=dead_letter database={} task_id={}.{} namespace=\"{}\" trace_id={} "
            "error=\"{}\"",
            metrics_.database(), task.ref.id, task.ref.token, util::log_safe(task.namespace_name),
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
    writes_.record(std::move(settled.outcome), task.namespace_name, std::string{settled.label});
}

Answer TaskBoard::complete(const std::string& session_id, const std::string& task_id,
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
    return Answer::accepted;
}

Answer TaskBoard::fail(const std::string& session_id, const std::string& task_id, std::string error,
                       bool retryable, std::chrono::milliseconds min_delay) {
    const auto task = in_flight_.take(task_id, session_id);
    if (!task) return Answer::unknown_task;
    untrack(*task);
    settle(*task, failed(*task, Failure::reported,
                         error.empty() ? "worker reported failure" : std::move(error), retryable,
                         min_delay));
    return Answer::accepted;
}

Answer TaskBoard::heartbeat(const std::string& session_id, const std::string& task_id,
                            std::optional<std::string> progress_json) {
    auto beat = in_flight_.beat(task_id, session_id, std::move(progress_json), now_());
    if (!beat.held) return Answer::unknown_task;
    metrics_.heartbeats_total.Increment();
    // Its workflow was cancelled: told again, in case the sink missed the first cancel.
    if (beat.cancelled) return Answer::unknown_task;
    if (beat.lease) writes_.ask_lease(std::move(*beat.lease));
    return Answer::accepted;
}

void TaskBoard::cancel(const std::vector<std::string>& task_ids) {
    for (const auto& task_id : task_ids) {
        auto* task = in_flight_.find(task_id);
        if (!task || task->cancelled) continue;
        task->cancelled = true;
        if (task->lease_asked != Clock::time_point{}) writes_.forget_lease(task->ref);
        if (auto* sink = registry_.find(task->session_id); sink && sink->sink) {
            sink->sink->send_cancel(task_id, "the task's workflow was cancelled");
        }
        spdlog::info("event=task_cancelled database={} task_id={} namespace=\"{}\" trace_id={}",
                     metrics_.database(), task_id, util::log_safe(task->namespace_name),
                     task->trace_id);
    }
}

std::size_t TaskBoard::sink_lost(const std::string& session_id) {
    const auto lost = in_flight_.take_session(session_id);
    for (const auto& task : lost) {
        untrack(task);
        settle(task, failed(task, Failure::lost, "worker connection lost", true));
    }
    if (!lost.empty())
        spdlog::info("event=worker_lost database={} session={} rearmed={}", metrics_.database(),
                     session_id, lost.size());
    return lost.size();
}

std::size_t TaskBoard::expire() {
    const auto expired = in_flight_.take_expired(now_());
    if (expired.empty()) return 0;
    for (const auto& task : expired) {
        untrack(task);
        const auto why = InFlightTable::why_expired(task, now_());
        spdlog::debug("event=task_timed_out task_id={}.{} namespace=\"{}\" trace_id={}",
                      task.ref.id, task.ref.token, util::log_safe(task.namespace_name),
                      task.trace_id);
        settle(task, failed(task, Failure::timed_out, why, true));
    }
    spdlog::warn("event=tasks_timed_out database={} count={}", metrics_.database(), expired.size());
    return expired.size();
}

void TaskBoard::abandon_all(const std::string& reason) {
    for (const auto& task : in_flight_.take_all()) {
        untrack(task);
        settle(task, failed(task, Failure::lost, reason, true));
    }
}

}  // namespace outboxd::dispatch
