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
    ShardRanges shards;  // shards this incarnation holds an unexpired lease on
};

class ClusterStore {
public:
    explicit ClusterStore(const std::string& database_url);
    ~ClusterStore();
    ClusterStore(const ClusterStore&) = delete;
    ClusterStore& operator=(const ClusterStore&) = delete;

    // Registers (or re-registers, replacing an older incarnation of the same node id)
    // this incarnation with a fresh heartbeat.
    void register_node(std::string_view node_id, std::string_view incarnation,
                       std::string_view advertise_url);
    void deregister(std::string_view incarnation);
    // Nodes whose heartbeat is younger than `ttl`, by node id, with their leased shards.
    std::vector<NodeRecord> live_nodes(std::chrono::milliseconds ttl);

    // Refreshes the heartbeat and, when it found our row, renews our leases (renew_shards()),
    // in one statement: the shards we hold, renewed; nullopt, with nothing renewed, when our
    // row is gone (another incarnation replaced it).
    std::optional<ShardRanges> beat(std::string_view incarnation, bool draining,
                                    std::chrono::milliseconds ttl);

    // Takes the leases of shards in `ranges` that are free, expired or already ours, for
    // `ttl`; returns every shard in `ranges` we now hold.
    ShardRanges acquire_shards(std::string_view incarnation, const ShardRanges& ranges,
                               std::chrono::milliseconds ttl);
    // Extends every lease we hold (expired ones nobody took included); returns them.
    ShardRanges renew_shards(std::string_view incarnation, std::chrono::milliseconds ttl);
    // Gives up our leases on `ranges` at once, so another node can take them.
    void release_shards(std::string_view incarnation, const ShardRanges& ranges);
    // Shards leased to `incarnation` with an unexpired lease.
    ShardRanges held_shards(std::string_view incarnation);

private:
    std::unique_ptr<PgSession> session_;
};

}  // namespace outboxd::store
