#pragma once

// This node's membership in the cluster and its share of the 1024 shards, coordinated
// only through PostgreSQL (dispatcher_nodes, shard_leases) and judged by its clock.
//
// Every tick (a third of the lease TTL, start to start) the member heartbeats and renews its
// lease in one statement, reads the live nodes, computes its share (sticky_share: keep what
// it holds up to a fair share, give up only the excess, take its part of the free shards),
// releases what is outside it (the giver stops claiming there first: a claim checks the
// shard's owner inside the statement) and acquires the rest. A dead node's shards become
// acquirable when its lease expires, and the survivors split them in their next tick; when
// another node took some of ours first, the member looks again 50 ms later (three times at
// most in a row). A node whose lease has less left than a live node's ever has (it missed a
// renewal) gets a tick of ours just after its lease lapses, by the database's count of what
// is left: a killed node's shards are taken within about the lease TTL of its last renewal.
//
// Back from an outage of its database long enough for leases to lapse, the member keeps what
// it holds and takes nothing for one lease TTL: the others' leases lapsed because they could
// not reach the database either, and they still hold tasks out whose outcomes would be
// refused if their rows went to a new owner. A node that does not come back in that time is
// dead, and its shards are taken as usual.
//
// Thread affinity: the loop thread; the SQL runs on `lane`.

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/steady_timer.hpp>

#include "outboxd/metrics/node_metrics.hpp"
#include "outboxd/store/cluster_store.hpp"
#include "outboxd/store/lanes.hpp"
#include "outboxd/store/outbox_session.hpp"
#include "outboxd/util/failure_run.hpp"
#include "outboxd/util/lifetime.hpp"

namespace outboxd::cluster {

struct MemberSettings {
    std::string node_id;
    std::string incarnation;  // node id + boot id: claims name this
    std::string advertise_url;
    std::chrono::milliseconds lease_ttl{5000};
};

class ClusterMember {
public:
    ClusterMember(boost::asio::any_io_executor loop, store::ClusterLane& lane,
                  metrics::DatabaseMetrics& metrics, MemberSettings settings);

    void start();
    // Before start(): the URL workers reach this node at (known once the port is bound).
    void set_advertise_url(std::string url) { settings_.advertise_url = std::move(url); }
    // Called on the loop after a tick changed the live nodes or this node's shards.
    void on_change(std::function<void()> callback) { on_change_ = std::move(callback); }
    // Graceful exit: stop claiming everywhere, release every lease, delete the heartbeat.
    void leave(std::function<void()> done);

    [[nodiscard]] store::Owner owner() const { return {settings_.incarnation, claimable_}; }
    [[nodiscard]] const std::vector<store::NodeRecord>& nodes() const { return nodes_; }
    [[nodiscard]] bool registered() const { return registered_; }
    // The last tick reached the database.
    [[nodiscard]] bool healthy() const { return registered_ && failures_.failures() == 0; }
    [[nodiscard]] const MemberSettings& settings() const { return settings_; }

private:
    struct TickResult {
        bool ok = false;
        std::vector<store::NodeRecord> nodes;
        store::ShardRanges claimable;
        bool short_taken = false;  // some shards we went for were taken by another node first
        std::string error;
    };

    void tick();
    // The next tick a period after the last one started, or at `sooner` if that is earlier.
    void schedule(std::optional<std::chrono::steady_clock::time_point> sooner);
    // When the lease of the first node that missed a renewal lapses (plus a margin), if any.
    [[nodiscard]] std::optional<std::chrono::steady_clock::time_point> lapse_of_silent_node(
        const std::vector<store::NodeRecord>& nodes,
        std::chrono::steady_clock::time_point now) const;
    void apply(TickResult result);
    // Whether this tick keeps to the shards held (see above).
    [[nodiscard]] bool settling(std::chrono::steady_clock::time_point now) const;
    static TickResult run_tick(store::ClusterStore& cluster, const MemberSettings& settings,
                               bool leaving, bool settling);

    boost::asio::any_io_executor loop_;
    store::ClusterLane& lane_;
    metrics::DatabaseMetrics& metrics_;
    MemberSettings settings_;
    std::vector<store::NodeRecord> nodes_;
    store::ShardRanges claimable_;
    bool registered_ = false;
    bool ticking_ = false;
    std::chrono::steady_clock::time_point tick_started_{};
    int retakes_ = 0;  // quick ticks in a row after a short take
    static constexpr std::chrono::milliseconds kRetakeAfter{50};
    static constexpr std::chrono::milliseconds kLapseMargin{10};
    static constexpr std::chrono::milliseconds kSoonest{10};
    static constexpr int kMaxRetakes = 3;
    bool leaving_ = false;
    util::FailureRun failures_;  // consecutive failed ticks
    std::chrono::steady_clock::time_point settle_until_{};
    std::function<void()> on_change_;
    boost::asio::steady_timer timer_;
    util::Lifetime lifetime_;
};

}  // namespace outboxd::cluster
