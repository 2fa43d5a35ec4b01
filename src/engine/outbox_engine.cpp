#include "outboxd/engine/outbox_engine.hpp"

#include <condition_variable>
#include <mutex>
#include <random>

#include <boost/asio/post.hpp>
#include <spdlog/spdlog.h>

#include "outboxd/store/migrator.hpp"
#include "outboxd/store/pooler_probe.hpp"
#include "outboxd/store/store_error.hpp"
#include "outboxd/util/retry_backoff.hpp"

#include "wake_router.hpp"

namespace outboxd::engine {
namespace {

// Lanes the loop feeds one job at a time (claims, outcomes) or a few (maintenance, cluster)
// hold a handful; the API lane takes one job per request in flight.
constexpr std::size_t kInternalLaneCapacity = 16;
constexpr std::size_t kApiLaneCapacity = 1024;

store::LaneSettings lane(std::string name, metrics::DatabaseMetrics& metrics,
                         std::size_t capacity = kInternalLaneCapacity) {
    store::LaneSettings s;
    s.rejected = &metrics.lane_rejected(name);
    s.name = std::move(name);
    s.capacity = capacity;
    return s;
}

// The lanes a quiet database does not use (no claims apart without a round in flight, no
// outcomes without tasks) close their connections after this long.
constexpr std::chrono::milliseconds kIdleClose{60'000};

store::LaneSettings idle_closing(store::LaneSettings s) {
    s.idle_close = kIdleClose;
    return s;
}

// Claims need not wait for the WAL flush: one lost in a crash is claimed again.
store::LaneSettings claims_lane(std::string name, metrics::DatabaseMetrics& metrics) {
    auto s = lane(std::move(name), metrics);
    s.commits = store::OutboxSession::Commits::relaxed;
    return s;
}

// A request must not hold its lane (and every request queued behind it) for minutes.
// The API lane's stores also serve HTTP push targets, and so hold the keys of their secrets.
store::LaneSettings api_lane(metrics::DatabaseMetrics& metrics, const EngineSettings& settings) {
    auto s = lane("api", metrics, kApiLaneCapacity);
    s.statement_timeout = settings.api_statement_timeout;
    s.secrets = settings.secrets;
    return s;
}

}  // namespace

OutboxEngine::Lanes::Lanes(const EngineSettings& settings, metrics::DatabaseMetrics& metrics)
    : claims(claims_lane("claims", metrics), settings.database_url),
      claims_apart(idle_closing(claims_lane("claims_apart", metrics)), settings.database_url),
      outcomes(idle_closing(lane("outcomes", metrics)), settings.database_url),
      maintenance(lane("maintenance", metrics), settings.database_url),
      api(api_lane(metrics, settings), settings.database_url),
      cluster(lane("cluster", metrics), settings.database_url) {}

OutboxEngine::OutboxEngine(EngineContext context, EngineSettings settings)
    : context_(std::move(context)),
      settings_(std::move(settings)),
      metrics_(context_.metrics, settings_.name),
      lanes_(settings_, metrics_),
      rounds_(context_.loop, lanes_.claims, lanes_.claims_apart, settings_.name),
      writes_(context_.loop, lanes_.outcomes, metrics_, settings_.max_outcome_batch),
      namespaces_(context_.loop, lanes_.api, settings_.default_max_in_flight,
                  settings_.settings_refresh, settings_.name),
      member_(context_.loop, lanes_.cluster, metrics_, settings_.member),
      dispatcher_(context_.loop, {rounds_, writes_}, context_.registry, namespaces_, metrics_,
                  settings_.dispatch, [this] { return member_.owner(); }),
      maintenance_(
          context_.loop, lanes_.maintenance, metrics_,
          maintenance::upkeep_jobs(
              settings_.maintenance,
              {[this] { return member_.owner(); },
               [this]() -> std::optional<maintenance::OrderedNamespaces> {
                   if (!namespaces_.loaded()) return std::nullopt;
                   auto [skip, block] = namespaces_.ordered();
                   return maintenance::OrderedNamespaces{std::move(skip), std::move(block)};
               },
               [this](std::size_t) { dispatcher_.claim_from_front(); }, metrics_})) {}

OutboxEngine::~OutboxEngine() = default;

void OutboxEngine::add_sinks(std::unique_ptr<sinks::EngineSinks> sinks) {
    if (sinks) sinks_.push_back(std::move(sinks));
}

bool OutboxEngine::migrate_once() {
    if (migrated_) return true;
    try {
        // A pooler that shares server connections between clients would lose our session
        // state: refuse the database (unready, retried with the backoff) until it is fixed.
        if (const auto shared = store::shared_server_process(settings_.database_url)) {
            spdlog::error("event=pooler_refused database={} error=\"{}\"", settings_.name,
                          store::pooler_refusal(settings_.name, *shared));
            return false;
        }
        if (!settings_.migrate) {
            // Someone else migrates (`outboxd migrate`, a deploy step): serve only a schema
            // this build knows all of; until then the database stays unready.
            if (!store::migrations_current(settings_.database_url)) {
                spdlog::error(
                    "event=schema_behind database={} expected_version={} reason=\"the schema "
                    "lacks migrations this build needs and OUTBOXD_MIGRATE=false: run `outboxd "
                    "migrate`\"",
                    settings_.name, store::bundled_migrations().back().version);
                return false;
            }
            migrated_ = true;
            return true;
        }
        const auto report = store::migrate(settings_.database_url);
        spdlog::info("event=migrated database={} version={} applied={}", settings_.name,
                     report.current_version, report.applied.size());
        migrated_ = true;
    } catch (const store::UnavailableError& error) {
        spdlog::warn("event=database_unreachable database={} error=\"{}\"", settings_.name,
                     error.what());
    }
    return migrated_;
}

void OutboxEngine::start() {
    if (migrated_) return begin();
    // Retried off the loop, backing off, until it succeeds or the engine stops.
    migrator_ = std::jthread(
        [this, loop = context_.loop, watch = lifetime_.watch()](const std::stop_token& stop) {
            util::RetryBackoff backoff{std::chrono::milliseconds{500},
                                       std::chrono::milliseconds{30000}, std::random_device{}()};
            std::mutex mutex;
            std::condition_variable_any wait;
            while (true) {
                bool done = false;
                try {
                    done = migrate_once();
                } catch (const std::exception& error) {
                    // A migration that fails (not an outage) will not succeed by retrying soon.
                    spdlog::error("event=migration_failed database={} error=\"{}\"", settings_.name,
                                  error.what());
                }
                if (done) {
                    boost::asio::post(loop, [this, watch] {
                        if (!watch.expired() && !stopped_) begin();
                    });
                    return;
                }
                std::unique_lock lock{mutex};
                if (wait.wait_for(lock, stop, backoff.next(),
                                  [&stop] { return stop.stop_requested(); })) {
                    return;
                }
            }
        });
}

void OutboxEngine::begin() {
    started_ = true;
    member_.on_change([this] { cluster_changed(); });
    member_.start();
    namespaces_.start();
    dispatcher_.start();
    maintenance_.start();
    for (auto& sinks : sinks_) sinks->start();
    wakes_ = std::make_unique<WakeRouter>(
        context_.loop, dispatcher_, settings_.name,
        settings_.listen_url.empty() ? settings_.database_url : settings_.listen_url,
        settings_.dispatch.task_id_suffix);
    if (on_started_) on_started_();
}

void OutboxEngine::cluster_changed() {
    if (on_cluster_change_) on_cluster_change_();
    // New shards may hold a dead node's claims or cancelled rows: repair them now.
    maintenance_.shards_changed();
    dispatcher_.ranges_changed();
    sinks::ShardCounts owned;
    for (const auto& node : member_.nodes()) owned[node.incarnation] = node.shards.count();
    // Its own claimable shards, as every claim of this node sees them.
    const auto& me = member_.settings().incarnation;
    owned[me] = member_.owner().ranges.count();
    for (auto& sinks : sinks_) sinks->cluster_changed(owned, me);
}

void OutboxEngine::drain(std::function<void()> done) {
    // Never started (its database out of reach since): nothing is out, nothing to leave.
    if (!started_) return done();
    // The next owner of the shards reconciles them.
    maintenance_.pause_for_drain();
    dispatcher_.drain([this, done = std::move(done)]() mutable { member_.leave(std::move(done)); });
}

void OutboxEngine::stop() {
    stopped_ = true;
    migrator_.request_stop();
    if (!started_) return;
    for (auto& sinks : sinks_) sinks->stop();
    dispatcher_.stop();
    maintenance_.stop();
    namespaces_.stop();
    wakes_.reset();
}

}  // namespace outboxd::engine
