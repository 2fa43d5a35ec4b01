#pragma once

// The dispatch loop of one node: claims due rows for the routes its connected workers can
// run (never more than their free credit), pushes each row as a task to the least-loaded
// eligible worker, and turns answers, timeouts and lost connections into outcomes.
//
// Triggers: the advisory wake (LISTEN), the poll backstop, freed credit while a backlog
// is likely, a new worker. At most one claim round is in flight; triggers during it
// coalesce into one more round.
//
// Thread affinity: the loop thread (the executor passed in), except that claims and
// outcome writes run on their DB lanes. Never blocks the loop on SQL.

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/steady_timer.hpp>

#include "outboxd/dispatch/backoff.hpp"
#include "outboxd/dispatch/claim_faults.hpp"
#include "outboxd/dispatch/claim_round.hpp"
#include "outboxd/dispatch/db_lane.hpp"
#include "outboxd/dispatch/namespace_cache.hpp"
#include "outboxd/dispatch/outcome_writer.hpp"
#include "outboxd/dispatch/route_activity.hpp"
#include "outboxd/metrics/node_metrics.hpp"
#include "outboxd/util/failure_run.hpp"
#include "outboxd/worker/worker_registry.hpp"

namespace outboxd::dispatch {

struct DispatchSettings {
    std::chrono::milliseconds poll_interval{500};
    std::int32_t batch_size = 256;
    std::int32_t max_attempts = 10;
    Backoff backoff;
    std::chrono::milliseconds task_timeout{30000};
    // Backstop re-arm of claims older than task_timeout + stale_grace, whoever holds them.
    std::chrono::milliseconds stale_grace{10000};
    // A claimer whose heartbeat is older than this is dead: its claims are re-armed.
    std::chrono::milliseconds liveness{5000};
    std::chrono::milliseconds reconcile_interval{1000};
    std::chrono::seconds retention{86400};
    std::chrono::milliseconds retention_interval{60000};
    // The durable gauges count the whole live backlog (one grouped query): every few
    // seconds, not per scrape.
    std::chrono::milliseconds gauge_interval{5000};
    std::size_t max_outcome_batch = 2000;
    // Claims start where their route stood this long ago (ClaimCursors): rows committed
    // later than that behind it wait for a claim from the front (the poll backstop).
    std::chrono::milliseconds claim_lookback{100};
};

// Lanes the dispatcher uses; they must outlive it.
struct DispatchLanes {
    DbLane& claims;
    DbLane& outcomes;
    DbLane& maintenance;
};

class Dispatcher {
public:
    using OwnerSource = std::function<store::Owner()>;

    Dispatcher(boost::asio::any_io_executor loop, DispatchLanes lanes,
               worker::WorkerRegistry& registry, NamespaceCache& namespaces,
               metrics::NodeMetrics& metrics, DispatchSettings settings, OwnerSource owner);
    ~Dispatcher();
    Dispatcher(const Dispatcher&) = delete;
    Dispatcher& operator=(const Dispatcher&) = delete;

    // Starts the poll, timeout, reconciliation, retention and gauge timers.
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
    void reconcile();

    // Answers from a worker. An answer for a task this worker does not hold is refused with
    // an unknown_task error and changes nothing.
    std::optional<worker::protocol::Error> on_complete(const worker::WorkerEntry& worker,
                                                       const worker::protocol::Complete& answer);
    std::optional<worker::protocol::Error> on_fail(const worker::WorkerEntry& worker,
                                                   const worker::protocol::Fail& answer);
    // The worker's connection is gone: its tasks are re-armed for immediate re-claim, each
    // consuming one attempt (dead-lettered when none is left). Removes it from the registry.
    void on_worker_lost(const std::string& session_id);

    // Drain: stop claiming; `done` runs once nothing is outstanding and every outcome is
    // written. abandon_outstanding() re-arms what is still out (drain deadline).
    void drain(std::function<void()> done);
    void abandon_outstanding(const std::string& reason);

    [[nodiscard]] std::size_t outstanding() const { return in_flight_.size(); }
    [[nodiscard]] bool claiming() const { return claiming_; }
    [[nodiscard]] const OutcomeWriter& outcomes() const { return outcomes_; }

private:
    struct InFlight {
        store::ClaimRef ref;
        std::string session_id;
        std::string namespace_name;
        std::int32_t attempt = 0;  // zero-based attempt this claim is running (stored value)
        std::multimap<std::chrono::steady_clock::time_point, std::string>::iterator deadline;
    };

    void sweep();
    void on_claimed(ClaimRoundResult result, std::string error, double seconds,
                    std::chrono::steady_clock::time_point round_started);
    // Sends a claimed row to a worker whose credit it has already taken (outstanding). Moves
    // the row's task fields out; its id, token and namespace stay.
    void push(worker::WorkerEntry& worker, store::OutboxRow& row);
    // A claimed row that cannot be sent (its input nests deeper than a frame may, or its
    // frame is larger than the worker reads; e.g. a row inserted by plain SQL):
    // dead-lettered with the reason, at once, instead of failing every delivery.
    void refuse(worker::WorkerEntry& worker, store::ClaimRef ref, const std::string& namespace_name,
                const std::string& dispatch_key, std::string reason);
    // Removes a task from the in-flight set and frees its worker's credit.
    InFlight take(std::unordered_map<std::string, InFlight>::iterator it);
    void record_failure(const InFlight& task, const std::string& error, bool retryable,
                        bool immediate);
    void expire_timeouts();
    void apply_retention();
    // Logs a maintenance task's failure when a run of them starts and now and then, and the
    // end of the run (empty `error`: it succeeded).
    void maintenance_result(std::string_view task, const std::string& error);
    void refresh_gauges();
    void check_drained();
    template <typename Handler>
    void every(boost::asio::steady_timer& timer, std::chrono::milliseconds period, Handler handler);

    boost::asio::any_io_executor loop_;
    DispatchLanes lanes_;
    worker::WorkerRegistry& registry_;
    NamespaceCache& namespaces_;
    metrics::NodeMetrics& metrics_;
    DispatchSettings settings_;
    OwnerSource owner_;
    OutcomeWriter outcomes_;

    std::unordered_map<std::string, InFlight> in_flight_;  // by task id
    std::multimap<std::chrono::steady_clock::time_point, std::string> deadlines_;
    bool claiming_ = false;
    bool sweep_again_ = false;
    bool backlog_likely_ = true;
    bool draining_ = false;
    bool stopped_ = false;
    bool maintenance_busy_ = false;
    // Which routes have due rows (loop thread).
    RouteActivity activity_;
    // When the round whose rows are being pushed was submitted (dispatch latency).
    std::chrono::steady_clock::time_point round_started_{};
    // Raised when every route should read from the front once (see ClaimCursors). The poll
    // backstop raises it no more often than every front_scan_period_: the poll interval,
    // stretched to twenty times the last round that read from the front when such rounds are
    // slow (many dead entries under an old snapshot).
    std::uint64_t front_generation_ = 1;
    std::uint64_t ranges_generation_ = 1;
    std::chrono::steady_clock::time_point reconcile_rest_until_{};
    std::chrono::steady_clock::time_point gauges_rest_until_{};
    std::chrono::steady_clock::time_point last_front_scan_{};
    std::chrono::steady_clock::duration front_scan_period_{settings_.poll_interval};
    ClaimFaults claim_faults_;
    // The claimer's tally, cursors and fair share, carried between claim rounds; used by one
    // round at a time (on the claims lane), shared so that a round in flight outlives the
    // dispatcher safely.
    std::shared_ptr<ClaimerState> claimer_;
    std::map<std::string, util::FailureRun> maintenance_failures_;  // by task
    // The highest claim token this node has seen; after a failed round, its own claims
    // above it are released before the next claim (see OutboxStore::release_claims_after).
    std::int64_t last_claim_token_ = 0;
    std::optional<std::int64_t> release_after_;
    std::function<void()> drained_;

    boost::asio::steady_timer poll_timer_;
    boost::asio::steady_timer claim_retry_timer_;
    boost::asio::steady_timer timeout_timer_;
    boost::asio::steady_timer reconcile_timer_;
    boost::asio::steady_timer retention_timer_;
    boost::asio::steady_timer gauge_timer_;
    std::shared_ptr<Dispatcher*> alive_;
};

// "<row id>.<claim token>": names one claim of one row on the wire.
[[nodiscard]] std::string task_id_for(const store::ClaimRef& ref);

}  // namespace outboxd::dispatch
