#include "outboxd/store/cluster_store.hpp"

#include <array>
#include <map>

#include "pg_session.hpp"

namespace outboxd::store {
namespace {

// A new incarnation of a node id replaces the old one's row, lease included: the old
// incarnation's shards are free at once (their owner has no row). The same incarnation
// registering again keeps its lease.
constexpr Statement kRegisterNode{"cluster_register_node", R"SQL(
INSERT INTO dispatcher_nodes (node_id, incarnation, advertise_url)
VALUES ($1, $2, $3)
ON CONFLICT (node_id) DO UPDATE
SET lease_expires_at = CASE WHEN dispatcher_nodes.incarnation = EXCLUDED.incarnation
                            THEN dispatcher_nodes.lease_expires_at ELSE '-infinity' END,
    incarnation = EXCLUDED.incarnation, advertise_url = EXCLUDED.advertise_url,
    started_at = now(), heartbeat_at = now(), draining = false)SQL"};

constexpr Statement kDeregister{"cluster_deregister",
                                "DELETE FROM dispatcher_nodes WHERE incarnation = $1"};

constexpr Statement kLiveNodes{"cluster_live_nodes", R"SQL(
SELECT n.node_id, n.incarnation, n.advertise_url, n.draining,
       coalesce(array_agg(l.shard ORDER BY l.shard) FILTER (WHERE l.shard IS NOT NULL), '{}')::text,
       ceil(extract(epoch FROM n.lease_expires_at - now()) * 1000)::bigint
FROM dispatcher_nodes n
LEFT JOIN shard_leases l ON l.owner = n.incarnation
WHERE n.lease_expires_at > now()
GROUP BY n.node_id, n.incarnation, n.advertise_url, n.draining, n.lease_expires_at
ORDER BY n.node_id)SQL"};

// What a member does every third of a TTL, in one round trip and one row written: the
// heartbeat and the renewal of our lease (false when our row is gone: another incarnation
// replaced it), and the shards we own.
constexpr Statement kBeat{"cluster_beat", R"SQL(
WITH beat AS (
  UPDATE dispatcher_nodes
  SET heartbeat_at = now(), lease_expires_at = now() + $3 * interval '1 millisecond',
      draining = $2
  WHERE incarnation = $1 RETURNING incarnation)
SELECT EXISTS (SELECT 1 FROM beat),
       (SELECT coalesce(array_agg(shard), '{}') FROM shard_leases WHERE owner = $1)::text)SQL"};

// A shard is free when nobody owns it or its owner's lease lapsed (or the owner's row is gone).
constexpr Statement kAcquireShards{"cluster_acquire_shards", R"SQL(
UPDATE shard_leases l
SET epoch = CASE WHEN owner IS DISTINCT FROM $1 THEN epoch + 1 ELSE epoch END, owner = $1
WHERE shard <@ $2::int4multirange
  AND (owner IS NULL OR owner = $1
       OR NOT EXISTS (SELECT 1 FROM dispatcher_nodes n
                      WHERE n.incarnation = l.owner AND n.lease_expires_at > now()))
RETURNING shard)SQL"};

constexpr Statement kReleaseShards{"cluster_release_shards", R"SQL(
UPDATE shard_leases SET owner = NULL
WHERE owner = $1 AND shard <@ $2::int4multirange)SQL"};

constexpr std::array kClusterStatements{kRegisterNode, kDeregister,    kLiveNodes,
                                        kBeat,         kAcquireShards, kReleaseShards};

ShardRanges shards_of(const pqxx::result& result) {
    std::vector<std::int32_t> shards;
    shards.reserve(result.size());
    for (const auto& r : result) shards.push_back(r[0].as<std::int32_t>());
    return ShardRanges::from_shards(shards);
}

// Parses the text form of an int[] ("{1,2,3}").
ShardRanges shards_of_array(std::string_view text) {
    std::vector<std::int32_t> shards;
    std::int32_t value = 0;
    bool in_number = false;
    for (const char c : text) {
        if (c >= '0' && c <= '9') {
            value = value * 10 + (c - '0');
            in_number = true;
        } else if (in_number) {
            shards.push_back(value);
            value = 0;
            in_number = false;
        }
    }
    return ShardRanges::from_shards(shards);
}

std::int64_t millis(std::chrono::milliseconds d) { return d.count(); }

}  // namespace

ClusterStore::ClusterStore(const std::string& database_url)
    : session_(std::make_unique<PgSession>(database_url, kClusterStatements)) {}

ClusterStore::~ClusterStore() = default;

void ClusterStore::register_node(std::string_view node_id, std::string_view incarnation,
                                 std::string_view advertise_url) {
    session_->transact(kRegisterNode, [&](pqxx::work& tx) {
        tx.exec_prepared(std::string{kRegisterNode.name}, std::string{node_id},
                         std::string{incarnation}, std::string{advertise_url});
    });
}

void ClusterStore::deregister(std::string_view incarnation) {
    session_->transact(kDeregister, [&](pqxx::work& tx) {
        tx.exec_prepared(std::string{kDeregister.name}, std::string{incarnation});
    });
}

std::vector<NodeRecord> ClusterStore::live_nodes() {
    return session_->autocommit(kLiveNodes, [&](pqxx::nontransaction& tx) {
        std::vector<NodeRecord> nodes;
        for (const auto& r : tx.exec_prepared(std::string{kLiveNodes.name})) {
            nodes.push_back({r[0].as<std::string>(), r[1].as<std::string>(), r[2].as<std::string>(),
                             r[3].as<bool>(), shards_of_array(r[4].c_str()),
                             std::chrono::milliseconds{r[5].as<std::int64_t>()}});
        }
        return nodes;
    });
}

std::optional<ShardRanges> ClusterStore::beat(std::string_view incarnation, bool draining,
                                              std::chrono::milliseconds ttl) {
    return session_->autocommit(kBeat, [&](pqxx::nontransaction& tx) -> std::optional<ShardRanges> {
        const auto r = tx.exec_prepared1(std::string{kBeat.name}, std::string{incarnation},
                                         draining, millis(ttl));
        if (!r[0].as<bool>()) return std::nullopt;
        return shards_of_array(r[1].c_str());
    });
}

ShardRanges ClusterStore::acquire_shards(std::string_view incarnation, const ShardRanges& ranges) {
    if (ranges.empty()) return {};
    return session_->transact(kAcquireShards, [&](pqxx::work& tx) {
        return shards_of(tx.exec_prepared(std::string{kAcquireShards.name},
                                          std::string{incarnation}, ranges.to_multirange()));
    });
}

void ClusterStore::release_shards(std::string_view incarnation, const ShardRanges& ranges) {
    if (ranges.empty()) return;
    session_->transact(kReleaseShards, [&](pqxx::work& tx) {
        tx.exec_prepared(std::string{kReleaseShards.name}, std::string{incarnation},
                         ranges.to_multirange());
    });
}

}  // namespace outboxd::store
