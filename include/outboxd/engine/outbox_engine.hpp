#pragma once

// Everything that exists once per outbox database, in one object: its lanes and stores, the
// namespace settings cache, the cluster membership and shard leases, the claimer and
// dispatcher (dispatch/dispatcher.hpp), maintenance, the wake listener, and the sink kinds'
// state kept in that database (HTTP push targets). It starts, drains and stops as one.
//
// A node holds its engines in an EngineDirectory (engine_directory.hpp), beside what all of
// them share: the loop, the sinks' registry and the metrics. A second database is a second
// engine: nothing outside the directory changes.
//
// Thread affinity: the loop thread; SQL runs on the engine's lanes.

#include <atomic>
#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <boost/asio/any_io_executor.hpp>

#include "outboxd/cluster/cluster_member.hpp"
#include "outboxd/dispatch/dispatcher.hpp"
#include "outboxd/dispatch/lane_ports.hpp"
#include "outboxd/dispatch/namespace_cache.hpp"
#include "outboxd/maintenance/maintenance.hpp"
#include "outboxd/maintenance/upkeep.hpp"
#include "outboxd/metrics/node_metrics.hpp"
#include "outboxd/sinks/sink_provider.hpp"
#include "outboxd/store/lanes.hpp"
#include "outboxd/util/lifetime.hpp"
#include "outboxd/util/secret_box.hpp"
#include "outboxd/worker/worker_registry.hpp"

namespace outboxd::engine {

class WakeRouter;

struct EngineSettings {
    std::string name = "default";  // the database's name
    std::string database_url;
    std::string listen_url;  // the wake listener's connection; empty: database_url
    // Whether start() must first bring the schema up to date (OUTBOXD_MIGRATE); it retries,
    // backing off, for as long as the database is out of reach.
    bool migrate = false;
    dispatch::DispatchSettings dispatch;
    maintenance::UpkeepSettings maintenance;
    cluster::MemberSettings member;
    std::int64_t default_max_in_flight = defaults::kDefaultMaxInFlight;
    // How soon a namespace's changed settings take effect (OUTBOXD_QUOTA_CACHE_TTL_MS).
    std::chrono::milliseconds settings_refresh{1000};
    // The server-side limit of each statement of an API request (0: none).
    std::chrono::milliseconds api_statement_timeout{0};
    std::size_t max_outcome_batch = 2000;
    // The keys of HTTP push targets' secrets at rest (OUTBOXD_SECRETS_KEY); none: in clear.
    std::shared_ptr<const util::SecretBox> secrets;
};

// What the engines of a node share; it all outlives them.
struct EngineContext {
    boost::asio::any_io_executor loop;
    worker::WorkerRegistry& registry;
    metrics::NodeMetrics& metrics;
    sinks::SinkPort& port;
};

class OutboxEngine {
public:
    OutboxEngine(EngineContext context, EngineSettings settings);
    ~OutboxEngine();
    OutboxEngine(const OutboxEngine&) = delete;
    OutboxEngine& operator=(const OutboxEngine&) = delete;

    // Before start(): a sink kind's state in this database.
    void add_sinks(std::unique_ptr<sinks::EngineSinks> sinks);
    // Called on the loop after the cluster of this database changed (nodes or shards).
    void on_cluster_change(std::function<void()> callback) {
        on_cluster_change_ = std::move(callback);
    }
    // Called on the loop once the engine started (its schema current): at once from start(),
    // or after its background migration succeeded.
    void on_started(std::function<void()> callback) { on_started_ = std::move(callback); }
    // Before start(): the URL workers reach this node at.
    void set_advertise_url(std::string url) { member_.set_advertise_url(std::move(url)); }

    // Starts at once when the schema is current (or not to be migrated), else once a
    // migration succeeded, retried in the background meanwhile: a database out of reach
    // delays only itself.
    void start();
    // Whether the schema is current: migrate() succeeded (from any thread) or none was asked.
    [[nodiscard]] bool migrated() const { return migrated_.load(); }
    // One migration attempt now (the node tries every database at start); false and logged
    // when the database is out of reach. Throws what a failed migration throws.
    bool migrate_once();
    // Stops claiming here, waits for the tasks out and their outcomes, hands the shards
    // back and leaves the cluster; then `done`.
    void drain(std::function<void()> done);
    // Gives up the tasks still out (the drain's deadline): re-armed at once.
    void abandon_outstanding(const std::string& reason) { dispatcher_.abandon_outstanding(reason); }
    void stop();

    [[nodiscard]] const std::string& name() const { return settings_.name; }
    [[nodiscard]] dispatch::Dispatcher& dispatcher() { return dispatcher_; }
    [[nodiscard]] cluster::ClusterMember& member() { return member_; }
    [[nodiscard]] const cluster::ClusterMember& member() const { return member_; }
    [[nodiscard]] dispatch::NamespaceCache& namespaces() { return namespaces_; }
    [[nodiscard]] store::AdminLane& admin_lane() { return lanes_.api; }
    [[nodiscard]] metrics::DatabaseMetrics& metrics() { return metrics_; }
    // The database reached, the node registered and ticking.
    [[nodiscard]] bool ready() const { return started_ && member_.healthy(); }
    // This kind's state here, if it keeps any (nullptr otherwise).
    template <typename Sinks>
    [[nodiscard]] Sinks* sinks() const {
        for (const auto& sinks : sinks_) {
            if (auto* found = dynamic_cast<Sinks*>(sinks.get())) return found;
        }
        return nullptr;
    }

private:
    struct Lanes {
        Lanes(const EngineSettings& settings, metrics::DatabaseMetrics& metrics);
        store::ClaimLane claims;
        store::ClaimLane claims_apart;
        store::OutcomeLane outcomes;
        store::MaintenanceLane maintenance;
        store::AdminLane api;
        store::ClusterLane cluster;
    };

    void begin();
    void cluster_changed();

    // Declaration order is destruction order reversed, and it matters: the lanes (whose
    // threads post into the loop) outlive everything that uses them.
    EngineContext context_;
    EngineSettings settings_;
    metrics::DatabaseMetrics metrics_;
    Lanes lanes_;
    dispatch::LaneRounds rounds_;
    dispatch::LaneTaskWrites writes_;
    dispatch::NamespaceCache namespaces_;
    cluster::ClusterMember member_;
    dispatch::Dispatcher dispatcher_;
    maintenance::Maintenance maintenance_;
    std::vector<std::unique_ptr<sinks::EngineSinks>> sinks_;
    std::function<void()> on_cluster_change_;
    std::function<void()> on_started_;
    std::unique_ptr<WakeRouter> wakes_;
    std::atomic<bool> migrated_{false};
    util::Lifetime lifetime_;
    bool started_ = false;
    bool stopped_ = false;
    // Retries the migration of a database out of reach at start; joined on destruction.
    std::jthread migrator_;
};

}  // namespace outboxd::engine
