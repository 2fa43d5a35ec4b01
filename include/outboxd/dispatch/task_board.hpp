#pragma once

// The task side of a node: claimed rows handed to the sinks that took their credit, and
// everything that ends them — answers, heartbeats, cancels, timeouts, lost sinks, a drain —
// turned into outcomes. What a task runs under and until when is the in-flight table's
// (InFlightTable::admit); the board applies it, keeps the sinks' credit and writes through
// TaskWrites.
//
// Thread affinity: the loop thread.

#include <chrono>
#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <boost/asio/any_io_executor.hpp>

#include "outboxd/dispatch/in_flight.hpp"
#include "outboxd/dispatch/namespace_cache.hpp"
#include "outboxd/dispatch/ports.hpp"
#include "outboxd/metrics/node_metrics.hpp"
#include "outboxd/sinks/sink_port.hpp"
#include "outboxd/util/clock.hpp"
#include "outboxd/util/periodic.hpp"
#include "outboxd/worker/worker_registry.hpp"

namespace outboxd::dispatch {

class TaskBoard {
public:
    using Clock = std::chrono::steady_clock;

    // A claimed row and the sink whose credit it took.
    struct Placed {
        worker::WorkerEntry* sink;
        store::OutboxRow* row;
    };

    // `expired` runs on the loop after tasks timed out (the timeout scan runs every
    // `scan_period`).
    TaskBoard(const boost::asio::any_io_executor& loop, worker::WorkerRegistry& registry,
              NamespaceCache& namespaces, TaskWrites& writes, metrics::DatabaseMetrics& metrics,
              InFlightSettings settings, std::chrono::milliseconds scan_period, util::SteadyNow now,
              std::function<void()> expired);

    void start() { timeout_timer_.start(); }
    void stop() { timeout_timer_.stop(); }

    // Hands each row to its sink as a task (moving its task fields out). One row's fault
    // hands that row back and goes on with the others. `round_started`: when the claim that
    // took them was submitted (dispatch latency).
    void push_all(const std::vector<Placed>& placed, Clock::time_point round_started);
    // A claimed row no sink can take now goes back untouched, without consuming an attempt.
    void release(const store::OutboxRow& row);

    sinks::Answer complete(const std::string& session_id, const std::string& task_id,
                           std::string result_json);
    sinks::Answer fail(const std::string& session_id, const std::string& task_id, std::string error,
                       bool retryable, std::chrono::milliseconds min_delay);
    sinks::Answer heartbeat(const std::string& session_id, const std::string& task_id,
                            std::optional<std::string> progress_json);
    // Claims settled without their sinks (a cancelled workflow, on any node): the sink
    // holding each is told to stop; its answer will write nothing.
    void cancel(const std::vector<std::string>& task_ids);
    // The sink is gone: its tasks are re-armed for immediate re-claim, each consuming one
    // attempt (dead-lettered when none is left). Returns how many.
    std::size_t sink_lost(const std::string& session_id);
    // Times out the tasks past their deadline now. Returns how many.
    std::size_t expire();
    // Re-arms every task still out (a drain's deadline).
    void abandon_all(const std::string& reason);

    [[nodiscard]] std::size_t outstanding() const { return in_flight_.size(); }

private:
    void push(worker::WorkerEntry& sink, store::OutboxRow& row, Clock::time_point round_started);
    // The task is no longer out: its sink's credit comes back.
    void untrack(const InFlightTask& task);
    void settle(const InFlightTask& task, SettledTask settled);

    worker::WorkerRegistry& registry_;
    NamespaceCache& namespaces_;
    TaskWrites& writes_;
    metrics::DatabaseMetrics& metrics_;
    util::SteadyNow now_;
    std::size_t db_;  // the database's index: its share of the sinks' credit
    InFlightTable in_flight_;
    std::function<void()> expired_;
    util::Periodic timeout_timer_;
};

}  // namespace outboxd::dispatch
