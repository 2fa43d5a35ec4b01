#pragma once

// The dispatch loop of one node: claims due rows for the routes its connected workers can
// run (never more than their free credit), pushes each row as a task to the least-loaded
// eligible worker, and turns answers, timeouts and lost connections into outcomes.
//
// Triggers: the advisory wake (LISTEN), the poll backstop, freed credit while a backlog
// is likely, a new worker. At most one claim round is in flight; triggers during it
// coalesce into one more round. A wake for routes that were idle, while a round is in
// flight, claims them apart at once (Claimer::claim_apart): a quiet tenant beside a busy
// one waits for neither the busy one's round nor its own.
//
// Dispatch speaks to workers in domain terms (worker::Task out, answers in); the wire
// protocol stays in the session.
//
// Thread affinity: the loop thread (the executor passed in), except that claims, outcome
// writes and maintenance run on their DB lanes. Never blocks the loop on SQL.

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/steady_timer.hpp>

#include "outboxd/config/defaults.hpp"
#include "outboxd/dispatch/claimer.hpp"
#include "outboxd/dispatch/db_lane.hpp"
#include "outboxd/dispatch/in_flight.hpp"
#include "outboxd/dispatch/lease_writer.hpp"
#include "outboxd/dispatch/maintenance.hpp"
#include "outboxd/dispatch/namespace_cache.hpp"
#include "outboxd/dispatch/outcome_writer.hpp"
#include "outboxd/dispatch/periodic.hpp"
#include "outboxd/dispatch/route_activity.hpp"
#include "outboxd/dispatch/task_policy.hpp"
#include "outboxd/metrics/node_metrics.hpp"
#include "outboxd/util/backoff.hpp"
#include "outboxd/util/lifetime.hpp"
#include "outboxd/worker/worker_registry.hpp"

namespace outboxd::dispatch {

struct DispatchSettings {
    std::chrono::milliseconds poll_interval{defaults::kPollInterval};
    std::int32_t batch_size = defaults::kBatchSize;
    std::int32_t max_attempts = defaults::kMaxAttempts;
    util::Backoff backoff;
    std::chrono::milliseconds task_timeout{defaults::kTaskTimeout};
    // Backstop re-arm of claims older than task_timeout + stale_grace, whoever holds them
    // (the dispatcher sets maintenance.stale from them).
    std::chrono::milliseconds stale_grace{defaults::kStaleGrace};
    std::size_t max_outcome_batch = 2000;
    // Claims start where their route stood this long ago (ClaimCursors): rows committed
    // later than that behind it wait for a claim from the front (the poll backstop).
    std::chrono::milliseconds claim_lookback{defaults::kClaimLookback};
    Maintenance::Settings maintenance;
};

// Lanes the dispatcher uses; they must outlive it.
struct DispatchLanes {
    DbLane& claims;
    DbLane& claims_apart;  // claims for routes woken from idle, beside a round in flight
    DbLane& outcomes;
    DbLane& maintenance;
};

// What became of an answer from a worker.
enum class Answer {
    accepted,
    unknown_task,  // the worker holds no task of that id: nothing changed
};

// The coordinator: decides when to claim and for which routes (the Claimer runs the rounds),
// places each claimed row on a worker, tracks it (InFlightTable) and turns its end into an
// outcome (OutcomeWriter). Maintenance runs beside it.
class Dispatcher {
public:
    using OwnerSource = std::function<store::Owner()>;

    Dispatcher(const boost::asio::any_io_executor& loop, DispatchLanes lanes,
               worker::WorkerRegistry& registry, NamespaceCache& namespaces,
               metrics::NodeMetrics& metrics, DispatchSettings settings, OwnerSource owner);
    Dispatcher(const Dispatcher&) = delete;
    Dispatcher& operator=(const Dispatcher&) = delete;

    // Starts the poll, timeout and maintenance timers.
    void start();
    // Cancels every timer. Outstanding tasks stay claimed (the next owner re-arms them).
    void stop();

    // A sweep should run soon (wake, new worker, changed credit, new shards).
    void request_sweep();
    // Asks the next round to claim from the front of the index: rows were put back in line
    // behind where claims read on (re-arms, a resume).
    void claim_from_front();
    // A worker joined: its routes may hold rows nobody was woken for.
    void worker_joined();
    // A wake: new rows in these (namespace, task_queue) pairs, and, with `anywhere`, maybe
    // in any route.
    void woken(const std::vector<std::pair<std::string, std::string>>& queues, bool anywhere);
    // The owned shard ranges changed: count claims again and read from the front.
    void ranges_changed();
    // Re-arms orphaned and stale claims and settles rows of cancelled workflows on the owned
    // shards now (boot and takeover), instead of at the next reconcile tick.
    void reconcile() { maintenance_.reconcile(); }

    // Answers from the worker of `session_id`. An answer for a task it does not hold changes
    // nothing (unknown_task). `result_json` (checked by the caller: JSON within
    // OUTBOXD_MAX_RESULT_BYTES that jsonb can hold) is kept as the row's result unless it is
    // null or the namespace keeps none.
    Answer on_complete(const std::string& session_id, const std::string& task_id,
                       std::string result_json = "null");
    // A retry waits at least `min_delay` (an HTTP target's Retry-After), else the backoff.
    Answer on_fail(const std::string& session_id, const std::string& task_id, std::string error,
                   bool retryable, std::chrono::milliseconds min_delay = {});
    // A heartbeat: a heartbeating task's deadline moves on; its durable deadline, the
    // heartbeat's time and new `progress_json` (checked by the caller) are written in
    // batches, now and then. unknown_task also for a cancelled task: tell the worker again.
    Answer on_heartbeat(const std::string& session_id, const std::string& task_id,
                        std::optional<std::string> progress_json);
    // Claims settled without their workers (a cancelled workflow, on any node): the worker
    // holding each that this node pushed is told to stop; its answer will write nothing.
    void cancel_tasks(const std::vector<std::string>& task_ids);
    // The worker's connection is gone: its tasks are re-armed for immediate re-claim, each
    // consuming one attempt (dead-lettered when none is left). Removes it from the registry.
    void on_worker_lost(const std::string& session_id);

    // Drain: stop claiming; `done` runs once nothing is outstanding and every outcome is
    // written. abandon_outstanding() re-arms what is still out (drain deadline).
    void drain(std::function<void()> done);
    void abandon_outstanding(const std::string& reason);

    [[nodiscard]] std::size_t outstanding() const { return in_flight_.size(); }
    [[nodiscard]] bool claiming() const { return claiming_ || claimer_.claiming_apart(); }
    [[nodiscard]] const OutcomeWriter& outcomes() const { return outcomes_; }

private:
    using QueueKey = RouteActivity::QueueKey;
    // A claimed row and the worker whose credit it took.
    struct Placed {
        worker::WorkerEntry* worker;
        store::OutboxRow* row;
    };

    void sweep();
    void on_claimed(Claimer::Round round);
    // Claims the routes of woken `queues` that were idle apart from the round in flight, when
    // one is; returns the queues left to the rounds.
    std::vector<QueueKey> claim_apart(const std::vector<QueueKey>& queues,
                                      std::chrono::steady_clock::time_point now);
    void on_claimed_apart(Claimer::Round round);
    // Each row gets its worker and takes one of its credits; a row no worker can take now
    // goes back untouched.
    std::vector<Placed> place(std::vector<store::OutboxRow>& rows);
    void push_all(const std::vector<Placed>& placed,
                  std::chrono::steady_clock::time_point round_started);
    // Hands a claimed row to the worker whose credit it has already taken. Moves the row's
    // task fields out; its id, token and namespace stay.
    // `round_started`: when the round that claimed it was submitted (dispatch latency).
    void push(worker::WorkerEntry& worker, store::OutboxRow& row,
              std::chrono::steady_clock::time_point round_started);
    // The durable deadline to write for a task whose deadline is `deadline`.
    [[nodiscard]] std::chrono::milliseconds lease_for(
        std::chrono::steady_clock::time_point deadline,
        std::chrono::steady_clock::time_point now) const;
    // The task is no longer out: its worker's credit comes back.
    void untrack(const InFlightTask& task);
    void settle(const InFlightTask& task, SettledTask settled);
    void expire_timeouts();
    void check_drained();
    // The delivery controls of `names` that have any (for a claim request).
    [[nodiscard]] std::map<std::string, store::DeliveryControls> controls_of(
        const std::set<std::string>& names) const;
    // Routes a limit held back: a sweep when the soonest of them may go on.
    void held_back(const Claimer::Round& round);
    // Leaves out of `routes` those a limit holds back now.
    void drop_held(std::vector<worker::Route>& routes, std::chrono::steady_clock::time_point now);

    boost::asio::any_io_executor loop_;
    worker::WorkerRegistry& registry_;
    NamespaceCache& namespaces_;
    metrics::NodeMetrics& metrics_;
    DispatchSettings settings_;
    TaskDefaults task_defaults_;
    // How often a heartbeating task's durable deadline is written at most (without new
    // progress): well within the backstop's grace.
    std::chrono::milliseconds lease_refresh_;
    OwnerSource owner_;
    OutcomeWriter outcomes_;
    LeaseWriter leases_;
    Claimer claimer_;
    Maintenance maintenance_;
    InFlightTable in_flight_;
    // Which routes have due rows.
    RouteActivity activity_;

    // The namespaces of the round in flight, and of the claim apart in flight: a namespace is
    // in one claim at a time, so that each plans under its quota alone.
    std::set<std::string> round_namespaces_;
    std::set<std::string> apart_namespaces_;
    // Rows claimed apart since the last round was asked for, per namespace (for its tally).
    std::map<std::string, std::int64_t> claimed_apart_;
    // A round is in flight, or a sweep is posted (triggers meanwhile coalesce into one more).
    bool claiming_ = false;
    bool sweep_again_ = false;
    // The last round filled some route: answers that free credit claim again at once.
    bool backlog_likely_ = true;
    bool draining_ = false;
    bool stopped_ = false;
    std::function<void()> drained_;

    Periodic poll_timer_;
    Periodic timeout_timer_;
    // After a failed round, the round that follows its backoff.
    boost::asio::steady_timer claim_retry_timer_;
    // When a limit that held routes back may let rows go.
    boost::asio::steady_timer throttle_timer_;
    bool throttle_armed_ = false;
    std::chrono::steady_clock::time_point throttle_at_{};
    // An outcome write landed since the last round (concurrency limits may have room).
    bool slots_freed_ = false;
    // Routes a limit holds back, until when; `full`: a concurrency limit (an outcome write
    // that lands lets it go early).
    struct Held {
        std::chrono::steady_clock::time_point until;
        bool full = false;
    };
    std::map<store::ClaimScope, Held> held_;
    util::Lifetime lifetime_;
};

}  // namespace outboxd::dispatch
