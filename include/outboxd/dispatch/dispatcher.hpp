#pragma once

// The dispatch loop of one database: claims due rows for the routes its sinks can run
// (never more than their free credit), hands each row to the least-loaded eligible sink, and
// lets the answers, timeouts and lost sinks end them.
//
// The dispatcher only coordinates. The claimer decides which routes to claim and runs the
// claims (claimer.hpp); the task board holds the tasks out at sinks and ends them
// (task_board.hpp); the worker registry owns the sinks' credit. Triggers: the advisory wake
// (LISTEN), the poll backstop, freed credit while a backlog is likely, a new sink, an
// outcome write that landed. At most one round is in flight; triggers during it coalesce
// into one more round.
//
// Sinks never see this header: they reach dispatch through sinks::SinkPort.
//
// Thread affinity: the loop thread (the executor passed in); claims and writes run where
// the ports run them. Never blocks the loop on SQL.

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <boost/asio/any_io_executor.hpp>

#include "outboxd/config/defaults.hpp"
#include "outboxd/dispatch/claimer.hpp"
#include "outboxd/dispatch/namespace_cache.hpp"
#include "outboxd/dispatch/ports.hpp"
#include "outboxd/dispatch/task_board.hpp"
#include "outboxd/metrics/node_metrics.hpp"
#include "outboxd/sinks/sink_port.hpp"
#include "outboxd/util/backoff.hpp"
#include "outboxd/util/clock.hpp"
#include "outboxd/util/lifetime.hpp"
#include "outboxd/util/periodic.hpp"
#include "outboxd/worker/worker_registry.hpp"

namespace outboxd::dispatch {

struct DispatchSettings {
    std::chrono::milliseconds poll_interval{defaults::kPollInterval};
    std::int32_t batch_size = defaults::kBatchSize;
    std::int32_t max_attempts = defaults::kMaxAttempts;
    util::Backoff backoff;
    std::chrono::milliseconds task_timeout{defaults::kTaskTimeout};
    // The grace of the stale-claim backstop (maintenance): a heartbeating task's durable
    // deadline is written well within it.
    std::chrono::milliseconds stale_grace{defaults::kStaleGrace};
    // Claims start where their route stood this long ago (ClaimCursors): rows committed
    // later than that behind it wait for a claim from the front (the poll backstop).
    std::chrono::milliseconds claim_lookback{defaults::kClaimLookback};
    // Appended to this database's task ids (engine/engine_directory.hpp).
    std::string task_id_suffix;
    std::string database = "default";  // its name, in every task
    std::size_t database_index = 0;    // its index among the node's: its share of credit
};

// What the dispatcher works with; all of it outlives the dispatcher.
struct DispatchPorts {
    RoundRunner& rounds;
    TaskWrites& writes;
};

class Dispatcher {
public:
    using OwnerSource = std::function<store::Owner()>;
    using QueueKey = Claimer::QueueKey;

    Dispatcher(const boost::asio::any_io_executor& loop, DispatchPorts ports,
               worker::WorkerRegistry& registry, NamespaceCache& namespaces,
               metrics::DatabaseMetrics& metrics, const DispatchSettings& settings,
               OwnerSource owner, const util::SteadyNow& now = util::real_steady_now());
    Dispatcher(const Dispatcher&) = delete;
    Dispatcher& operator=(const Dispatcher&) = delete;

    // Starts the poll and timeout timers.
    void start();
    // Cancels every timer. Outstanding tasks stay claimed (the next owner re-arms them).
    void stop();

    // --- triggers ---------------------------------------------------------------------
    // A sweep should run soon (wake, new sink, changed credit, new shards).
    void request_sweep();
    // Rows were put back in line behind where claims read on (re-arms, a resume): the next
    // round reads from the front of the index.
    void claim_from_front();
    // A sink attached: its routes may hold rows nobody was woken for.
    void sink_attached();
    // A wake: new rows in these (namespace, task_queue) pairs, and, with `anywhere`, maybe
    // in any route. Idle routes are claimed apart while a round is in flight.
    void woken(const std::vector<QueueKey>& queues, bool anywhere);
    // The owned shard ranges changed: count claims again and read from the front.
    void ranges_changed();
    // The poll backstop (also run by the poll timer). A quiet database (kQuietPolls polls in a
    // row without a wake, a claimed row, a task out or new shards) probes at every
    // kQuietEvery-th poll only: an idle database beside busy ones costs them little.
    void poll();
    static constexpr int kQuietPolls = 20;
    static constexpr int kQuietEvery = 4;

    // --- the sinks' answers (sinks::SinkPort, through the engine directory) -------------
    sinks::Answer on_complete(const std::string& session_id, const std::string& task_id,
                              std::string result_json = "null");
    sinks::Answer on_fail(const std::string& session_id, const std::string& task_id,
                          std::string error, bool retryable,
                          std::chrono::milliseconds min_delay = {});
    sinks::Answer on_heartbeat(const std::string& session_id, const std::string& task_id,
                               std::optional<std::string> progress_json);
    // Claims settled without their sinks (a cancelled workflow, on any node).
    void cancel_tasks(const std::vector<std::string>& task_ids);
    // The sink is gone (the caller removes it from the registry): its tasks are re-armed,
    // each consuming one attempt.
    void on_sink_lost(const std::string& session_id);
    // Times out the tasks past their deadline now (also run by the timeout timer).
    void expire_timeouts();

    // Drain: stop claiming; `done` runs once nothing is outstanding and every outcome is
    // written. abandon_outstanding() re-arms what is still out (drain deadline).
    void drain(std::function<void()> done);
    void abandon_outstanding(const std::string& reason);

    [[nodiscard]] std::size_t outstanding() const { return tasks_.outstanding(); }
    [[nodiscard]] bool claiming() const { return claiming_ || claimer_.claiming_apart(); }

private:
    enum class Phase { running, draining, stopped };

    void sweep();
    void on_claimed(Claimer::Round round);
    void on_claimed_apart(Claimer::Round round);
    // Each row gets its sink and takes one of its credits; a row no sink can take now goes
    // back untouched.
    std::vector<TaskBoard::Placed> place(std::vector<store::OutboxRow>& rows);
    // A task ended: claim again at once while a backlog is likely.
    void task_ended();
    void check_drained();
    // Whether this database has due work it may not have claimed: while several have, the
    // sinks' windows are shared among them (worker::WorkerRegistry).
    // A share of the windows for due work it knows of, or none (worker_registry.hpp).
    void want(bool wants) { registry_.want(db_, wants); }
    // One look, for work there may be; a share it wants already stays.
    void look() {
        if (!registry_.wants(db_)) registry_.want(db_, worker::WorkerRegistry::Want::look);
    }
    [[nodiscard]] std::vector<worker::Route> routes() const;
    // Something happened that a poll should not wait for: polls probe every time again.
    void active() { quiet_polls_ = 0; }

    boost::asio::any_io_executor loop_;
    worker::WorkerRegistry& registry_;
    NamespaceCache& namespaces_;
    metrics::DatabaseMetrics& metrics_;
    TaskWrites& writes_;
    OwnerSource owner_;
    std::size_t db_;
    Claimer claimer_;
    TaskBoard tasks_;
    // A round is in flight, or a sweep is posted (triggers meanwhile coalesce into one more:
    // `sweep_again_`, which stays set until a round starts).
    bool claiming_ = false;
    bool sweep_again_ = false;
    // The last round filled some route: answers that free credit claim again at once.
    bool backlog_likely_ = true;
    int quiet_polls_ = 0;  // polls since the database was last active
    Phase phase_ = Phase::running;
    std::function<void()> drained_;
    util::Periodic poll_timer_;
    util::Lifetime lifetime_;
};

}  // namespace outboxd::dispatch
