#include "outboxd/engine/outbox_engine.hpp"

#include <spdlog/spdlog.h>

#include "wake_router.hpp"

namespace outboxd::engine {
namespace {

// Lanes the loop feeds one job at a time (claims, outcomes) or a few (maintenance, cluster)
// hold a handful; the API lane takes one job per request in flight.
constexpr std::size_t kInternalLaneCapacity = 16;
constexpr std::size_t kApiLaneCapacity = 1024;

store::LaneSettings lane(std::string name, metrics::NodeMetrics& metrics,
                         std::size_t capacity = kInternalLaneCapacity) {
    store::LaneSettings s;
    s.rejected = &metrics.db_lane_rejected_total.Add({{"lane", name}});
    s.name = std::move(name);
    s.capacity = capacity;
    return s;
}

// Claims need not wait for the WAL flush: one lost in a crash is claimed again.
store::LaneSettings claims_lane(std::string name, metrics::NodeMetrics& metrics) {
    auto s = lane(std::move(name), metrics);
    s.commits = store::OutboxSession::Commits::relaxed;
    return s;
}

// A request must not hold its lane (and every request queued behind it) for minutes.
// The API lane's stores also serve HTTP push targets, and so hold the keys of their secrets.
store::LaneSettings api_lane(metrics::NodeMetrics& metrics, const EngineSettings& settings) {
    auto s = lane("api", metrics, kApiLaneCapacity);
    s.statement_timeout = settings.api_statement_timeout;
    s.secrets = settings.secrets;
    return s;
}

}  // namespace

OutboxEngine::Lanes::Lanes(const EngineSettings& settings, metrics::NodeMetrics& metrics)
    : claims(claims_lane("claims", metrics), settings.database_url),
      claims_apart(claims_lane("claims_apart", metrics), settings.database_url),
      outcomes(lane("outcomes", metrics), settings.database_url),
      maintenance(lane("maintenance", metrics), settings.database_url),
      api(api_lane(metrics, settings), settings.database_url),
      cluster(lane("cluster", metrics), settings.database_url) {}

OutboxEngine::OutboxEngine(EngineContext context, EngineSettings settings)
    : context_(std::move(context)),
      settings_(std::move(settings)),
      lanes_(settings_, context_.metrics),
      rounds_(context_.loop, lanes_.claims, lanes_.claims_apart),
      writes_(context_.loop, lanes_.outcomes, context_.metrics, settings_.max_outcome_batch),
      namespaces_(context_.loop, lanes_.api, settings_.default_max_in_flight,
                  settings_.settings_refresh),
      member_(context_.loop, lanes_.cluster, context_.metrics, settings_.member),
      dispatcher_(context_.loop, {rounds_, writes_}, context_.registry, namespaces_,
                  context_.metrics, settings_.dispatch, [this] { return member_.owner(); }),
      maintenance_(
          context_.loop, lanes_.maintenance, context_.metrics,
          maintenance::upkeep_jobs(
              settings_.maintenance,
              {[this] { return member_.owner(); },
               [this]() -> std::optional<maintenance::OrderedNamespaces> {
                   if (!namespaces_.loaded()) return std::nullopt;
                   auto [skip, block] = namespaces_.ordered();
                   return maintenance::OrderedNamespaces{std::move(skip), std::move(block)};
               },
               [this](std::size_t) { dispatcher_.claim_from_front(); }, context_.metrics})) {}

OutboxEngine::~OutboxEngine() = default;

void OutboxEngine::add_sinks(std::unique_ptr<sinks::EngineSinks> sinks) {
    if (sinks) sinks_.push_back(std::move(sinks));
}

void OutboxEngine::start() {
    member_.on_change([this] { cluster_changed(); });
    member_.start();
    namespaces_.start();
    dispatcher_.start();
    maintenance_.start();
    for (auto& sinks : sinks_) sinks->start();
    wakes_ = std::make_unique<WakeRouter>(context_.loop, dispatcher_, settings_.database_url,
                                          settings_.dispatch.task_id_suffix);
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
    // The next owner of the shards reconciles them.
    maintenance_.pause_for_drain();
    dispatcher_.drain([this, done = std::move(done)]() mutable { member_.leave(std::move(done)); });
}

void OutboxEngine::stop() {
    for (auto& sinks : sinks_) sinks->stop();
    dispatcher_.stop();
    maintenance_.stop();
    namespaces_.stop();
    wakes_.reset();
}

}  // namespace outboxd::engine
