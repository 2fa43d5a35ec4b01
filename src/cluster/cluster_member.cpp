#include "outboxd/cluster/cluster_member.hpp"

#include <algorithm>
#include <stdexcept>

#include <boost/asio/post.hpp>
#include <spdlog/spdlog.h>

#include "outboxd/cluster/shard_share.hpp"
#include "outboxd/util/untrusted_text.hpp"

namespace outboxd::cluster {

ClusterMember::ClusterMember(boost::asio::any_io_executor loop, store::ClusterLane& lane,
                             metrics::DatabaseMetrics& metrics, MemberSettings settings)
    : loop_(std::move(loop)),
      lane_(lane),
      metrics_(metrics),
      settings_(std::move(settings)),
      timer_(loop_) {}

void ClusterMember::start() { tick(); }

void ClusterMember::schedule(std::optional<std::chrono::steady_clock::time_point> sooner) {
    if (leaving_) return;
    // Ticks keep a steady period from start to start (a slow tick does not push the next
    // one back). Never sooner than a tenth of a period after the last one ended, unless
    // asked for: no spin.
    const auto period = settings_.lease_ttl / 3;
    const auto now = std::chrono::steady_clock::now();
    auto next = std::max(tick_started_ + period, now + period / 10);
    if (sooner) next = std::min(next, std::max(*sooner, now + kSoonest));
    timer_.expires_at(next);
    timer_.async_wait([this, watch = lifetime_.watch()](auto ec) {
        if (!ec && !watch.expired()) tick();
    });
}

std::optional<std::chrono::steady_clock::time_point> ClusterMember::lapse_of_silent_node(
    const std::vector<store::NodeRecord>& nodes, std::chrono::steady_clock::time_point now) const {
    // A live node renews every period, so its lease has at least TTL - period left, give or
    // take a slow tick. One with less than TTL - 1.5 periods left missed a renewal: it may be
    // dead, and the first tick after its lease lapses takes its shards.
    const auto period = settings_.lease_ttl / 3;
    std::optional<std::chrono::steady_clock::time_point> first;
    for (const auto& node : nodes) {
        if (node.incarnation == settings_.incarnation) continue;
        if (node.lease_left >= settings_.lease_ttl - period - period / 2) continue;
        const auto lapse = now + node.lease_left + kLapseMargin;
        if (!first || lapse < *first) first = lapse;
    }
    return first;
}

bool ClusterMember::settling(std::chrono::steady_clock::time_point now) const {
    if (now < settle_until_) return true;
    // Out of reach for so long that leases lapsed (the last renewal came a tick before the
    // first failure).
    return registered_ && failures_.failures() > 0 &&
           failures_.lasted(now) + settings_.lease_ttl / 3 >= settings_.lease_ttl;
}

ClusterMember::TickResult ClusterMember::run_tick(store::ClusterStore& cluster,
                                                  const MemberSettings& s, bool leaving,
                                                  bool settling) {
    TickResult result;
    try {
        // Heartbeat and renewal in one round trip; on the first tick, or when our row was
        // replaced or removed, (re-)register first.
        auto beat = cluster.beat(s.incarnation, leaving, s.lease_ttl);
        if (!beat) {
            cluster.register_node(s.node_id, s.incarnation, s.advertise_url);
            beat = cluster.beat(s.incarnation, leaving, s.lease_ttl);
            if (!beat) throw std::runtime_error{"our dispatcher_nodes row vanished as we wrote it"};
        }
        const auto held = std::move(*beat);
        result.nodes = cluster.live_nodes();
        // Shares over live nodes that are not draining; every live node's shards are taken.
        std::vector<MemberHolding> members;
        store::ShardRanges owned = held;
        for (const auto& node : result.nodes) {
            owned = owned.unite(node.shards);
            if (!node.draining || node.incarnation == s.incarnation)
                members.push_back({node.node_id, node.shards.count()});
        }
        if (std::none_of(members.begin(), members.end(),
                         [&](const auto& m) { return m.node_id == s.node_id; })) {
            members.push_back({s.node_id, held.count()});
        }
        const auto target = leaving    ? store::ShardRanges::none()
                            : settling ? held
                                       : sticky_share(s.node_id, held, members, owned);
        const auto give = held.subtract(target);
        cluster.release_shards(s.incarnation, give);
        const auto wanted = target.subtract(held);
        const auto taken = cluster.acquire_shards(s.incarnation, wanted);
        // Another node took some first (its view was older or newer than ours): look again soon.
        result.short_taken = taken.count() < wanted.count();
        result.claimable = held.subtract(give).unite(taken);
        // live_nodes ran before the lease changes: show our own shards as they are now.
        for (auto& node : result.nodes) {
            if (node.incarnation == s.incarnation) node.shards = result.claimable;
        }
        result.ok = true;
    } catch (const std::exception& error) {
        result.error = error.what();
    }
    return result;
}

void ClusterMember::tick() {
    if (ticking_) return;
    ticking_ = true;
    tick_started_ = std::chrono::steady_clock::now();
    const bool queued = lane_.call(
        loop_, lifetime_.watch(),
        [settings = settings_, leaving = leaving_,
         settling = settling(std::chrono::steady_clock::now())](store::ClusterStores& db) {
            return run_tick(db.cluster, settings, leaving, settling);
        },
        [this](store::LaneResult<TickResult> done) {
            if (!done.ok()) done.value.error = std::move(done.error);  // run_tick catches its own
            apply(std::move(done.value));
        });
    if (!queued) {
        TickResult refused;
        refused.error = "the cluster lane is full";
        apply(std::move(refused));
    }
}

void ClusterMember::apply(TickResult result) {
    ticking_ = false;
    const auto now = std::chrono::steady_clock::now();
    if (!result.ok) {
        // Our leases lapse by the database clock on their own; claims check them in SQL.
        // Ticks keep their period (a third of the lease TTL) instead of backing off: the
        // first one that reaches the database must renew the leases before they lapse.
        if (failures_.failed(now)) {
            spdlog::warn("event=cluster_tick_failed database={} failures={} for_ms={} error=\"{}\"",
                         metrics_.database(), failures_.failures(), failures_.lasted(now).count(),
                         util::log_safe(result.error));
        }
        metrics_.up.Set(0);
        schedule(std::nullopt);
        return;
    }
    const auto lasted = failures_.lasted(now);
    const bool settle = settling(now);
    if (const auto failed = failures_.succeeded(); failed > 0) {
        spdlog::info("event=cluster_tick_recovered database={} failures={} after_ms={}{}",
                     metrics_.database(), failed, lasted.count(), settle ? " settling=true" : "");
        if (settle) settle_until_ = now + settings_.lease_ttl;
    }
    registered_ = true;
    const auto lapse = lapse_of_silent_node(result.nodes, now);
    if (settling(now)) {
        // Back from an outage, the others renew their leases within a tick: until then the
        // view lacks them, though they are alive. Keep showing them: a worker told that its
        // node left the cluster closes its connection, and that node re-arms its tasks.
        for (const auto& known : nodes_) {
            const bool listed =
                std::any_of(result.nodes.begin(), result.nodes.end(),
                            [&](const store::NodeRecord& n) { return n.node_id == known.node_id; });
            if (!listed) result.nodes.push_back(known);
        }
        std::sort(result.nodes.begin(), result.nodes.end(),
                  [](const auto& a, const auto& b) { return a.node_id < b.node_id; });
    }
    bool changed = result.claimable != claimable_ || result.nodes.size() != nodes_.size();
    for (std::size_t i = 0; !changed && i < nodes_.size(); ++i) {
        changed = nodes_[i].node_id != result.nodes[i].node_id ||
                  nodes_[i].advertise_url != result.nodes[i].advertise_url ||
                  nodes_[i].shards != result.nodes[i].shards;
    }
    if (result.claimable != claimable_) {
        spdlog::info("event=shards_changed database={} node={} shards={} count={}",
                     metrics_.database(), settings_.node_id, result.claimable.to_string(),
                     result.claimable.count());
    }
    claimable_ = std::move(result.claimable);
    nodes_ = std::move(result.nodes);
    metrics_.owned_shards.Set(claimable_.count());
    metrics_.cluster_nodes_live.Set(static_cast<double>(nodes_.size()));
    metrics_.up.Set(1);
    if (changed && on_change_) on_change_();
    // Short of our share because another node took some first: look again soon, a few times.
    retakes_ = result.short_taken && retakes_ < kMaxRetakes ? retakes_ + 1 : 0;
    auto sooner = lapse;
    if (retakes_ > 0) sooner = std::min(sooner.value_or(now + kRetakeAfter), now + kRetakeAfter);
    schedule(sooner);
}

void ClusterMember::leave(std::function<void()> done) {
    leaving_ = true;
    timer_.cancel();
    claimable_ = store::ShardRanges::none();
    auto finish = std::make_shared<std::function<void()>>(std::move(done));
    const bool queued = lane_.call(
        loop_, lifetime_.watch(),
        [settings = settings_](store::ClusterStores& db) {
            db.cluster.release_shards(settings.incarnation, store::ShardRanges::all());
            db.cluster.deregister(settings.incarnation);
        },
        [node_id = settings_.node_id, database = metrics_.database(),
         finish](const store::LaneResult<std::monostate>& done) {
            if (done.ok()) {
                spdlog::info("event=left_cluster database={} node={}", database, node_id);
            } else {
                // Leases and heartbeat expire on their own; the next owner re-arms our claims.
                spdlog::warn("event=leave_failed database={} error=\"{}\"", database,
                             util::log_safe(done.error));
            }
            (*finish)();
        });
    // Leases and heartbeat expire on their own: leaving must not wait for a full lane.
    if (!queued) boost::asio::post(loop_, *finish);
}

}  // namespace outboxd::cluster
