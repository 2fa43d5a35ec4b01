#pragma once

// Membership (dispatcher_nodes) and shard leases (shard_leases) on PostgreSQL, the only
// coordination medium between nodes. Every expiry is judged by the database clock.
//
// Thread affinity and errors as OutboxSession: one thread at a time; UnavailableError when
// the database is unreachable.

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "outboxd/store/shard_ranges.hpp"

namespace outboxd::store {

class PgSession;

struct NodeRecord {
    std::string node_id;
    std::string incarnation;
    std::string advertise_url;
    bool draining = false;
    ShardRanges shards;  // shards this incarnation owns (its lease holds: it is live)
    std::chrono::milliseconds lease_left{0};  // until its lease lapses, by the database clock
};

class ClusterStore {
public:
    explicit ClusterStore(const std::string& database_url);
    ~ClusterStore();
    ClusterStore(const ClusterStore&) = delete;
    ClusterStore& operator=(const ClusterStore&) = delete;

    // A node's lease is its own row's lease_expires_at: it holds the shards whose owner is its
    // incarnation while that is in the future. Shard rows change only on a change of hands.

    // Registers (or re-registers, replacing an older incarnation of the same node id, whose
    // shards are then free) this incarnation with a fresh heartbeat. A new incarnation's lease
    // starts with its first beat(); the same incarnation registering again keeps its lease.
    void register_node(std::string_view node_id, std::string_view incarnation,
                       std::string_view advertise_url);
    void deregister(std::string_view incarnation);

    // Nodes whose lease holds, by node id, with the shards they own.
    std::vector<NodeRecord> live_nodes();

    // Refreshes the heartbeat and renews our lease for `ttl` (one row written), and returns the
    // shards we own (those nobody took while our lease had lapsed included); nullopt, with
    // nothing renewed, when our row is gone (another incarnation replaced it).
    std::optional<ShardRanges> beat(std::string_view incarnation, bool draining,
                                    std::chrono::milliseconds ttl);

    // Takes the shards in `ranges` that are free, whose owner's lease lapsed, or already ours;
    // returns every shard in `ranges` we now own.
    ShardRanges acquire_shards(std::string_view incarnation, const ShardRanges& ranges);

    // Gives up our shards in `ranges` at once, so another node can take them.
    void release_shards(std::string_view incarnation, const ShardRanges& ranges);

private:
    std::unique_ptr<PgSession> session_;
};

}  // namespace outboxd::store
