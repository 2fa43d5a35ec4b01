#pragma once

// A node's periodic upkeep of the rows on its shards, on the maintenance lane:
// - reconcile: re-arms claims of incarnations that are gone (orphaned) and claims older than
//   a task may take (stale, whoever holds them), and settles rows of cancelled workflows;
// - retention: deletes finished rows older than the retention, in batches;
// - gauges: counts the live backlog per namespace (one grouped query) for the durable
//   gauges, and the workflows a dead letter holds back in ordered namespaces;
// - ordered delivery's backstop, with reconcile: lets go the waiting rows nothing holds
//   back any more (README, "Delivery controls").
// Reconcile and gauges rest 19 times as long as they last took, so that they never take
// more than a twentieth of the lane (scans that slow down under an old snapshot). Failures
// are logged when a run of them starts, now and then, and when it ends.
//
// Thread affinity: the loop thread; the work runs on the maintenance lane.

#include <chrono>
#include <cstddef>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <boost/asio/any_io_executor.hpp>

#include "outboxd/config/defaults.hpp"
#include "outboxd/dispatch/periodic.hpp"
#include "outboxd/metrics/node_metrics.hpp"
#include "outboxd/store/lanes.hpp"
#include "outboxd/util/failure_run.hpp"
#include "outboxd/util/lifetime.hpp"

namespace outboxd::dispatch {

class Maintenance {
public:
    using Clock = std::chrono::steady_clock;
    using OwnerSource = std::function<store::Owner()>;
    // The namespaces with ordered delivery, by what a dead letter does to its workflow.
    struct OrderedNamespaces {
        std::vector<std::string> skip;
        std::vector<std::string> block;
    };
    // Nothing while the namespaces' settings are not known yet.
    using OrderedSource = std::function<std::optional<OrderedNamespaces>()>;

    struct Settings {
        // A claimer whose heartbeat is older than this is dead: its claims are re-armed.
        std::chrono::milliseconds liveness{defaults::kLeaseTtl};
        // Claims older than this are re-armed whoever holds them (task timeout + grace).
        std::chrono::milliseconds stale{defaults::kTaskTimeout + defaults::kStaleGrace};
        // ... and claims whose holder wrote a lease, this long after it ended.
        std::chrono::milliseconds stale_grace{defaults::kStaleGrace};
        std::chrono::milliseconds reconcile_interval{1000};
        std::chrono::seconds retention{defaults::kRetention};
        std::chrono::milliseconds retention_interval{60000};
        // The durable gauges count the whole live backlog (one grouped query): every few
        // seconds, not per scrape.
        std::chrono::milliseconds gauge_interval{5000};
    };

    // `rearmed(rows)` runs on the loop when a reconcile put rows back in line (claimed rows
    // re-armed, waiting rows let go).
    Maintenance(boost::asio::any_io_executor loop, store::MaintenanceLane& lane,
                metrics::NodeMetrics& metrics, Settings settings, OwnerSource owner,
                OrderedSource ordered, std::function<void(std::size_t)> rearmed);

    void start();
    void stop();
    // Reconciles now (boot, takeover), unless one is running or reconciling is paused.
    void reconcile();
    // Drain: no more reconciles (the next owner of the shards does them).
    void pause_reconcile() { reconcile_paused_ = true; }

private:
    void apply_retention();
    void refresh_gauges();
    // Empty `error`: the task succeeded.
    void result(std::string_view task, const std::string& error);

    boost::asio::any_io_executor loop_;
    store::MaintenanceLane& lane_;
    metrics::NodeMetrics& metrics_;
    Settings settings_;
    OwnerSource owner_;
    OrderedSource ordered_;
    // Waiting rows may be left in a namespace no longer ordered (at boot, who knows; after
    // a namespace left ordering): the reconciles let them go until one finds fewer than a
    // batch.
    bool release_unordered_ = true;
    std::vector<std::string> last_ordered_;
    std::function<void(std::size_t)> rearmed_;
    bool reconciling_ = false;
    bool reconcile_paused_ = false;
    Clock::time_point reconcile_rest_until_{};
    Clock::time_point gauges_rest_until_{};
    std::map<std::string, util::FailureRun, std::less<>> failures_;  // by task
    Periodic reconcile_timer_;
    Periodic retention_timer_;
    Periodic gauge_timer_;
    util::Lifetime lifetime_;
};

}  // namespace outboxd::dispatch
