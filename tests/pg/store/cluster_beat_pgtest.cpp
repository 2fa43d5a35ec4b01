// ClusterStore::beat (a member's heartbeat and lease renewal in one statement) and the view of
// the live nodes, against a real PostgreSQL.

#include <catch2/catch.hpp>

#include "outboxd/store/cluster_store.hpp"
#include "test_database.hpp"

namespace outboxd::test {
namespace {

using store::ShardRanges;
using namespace std::chrono_literals;

const store::NodeRecord* find(const std::vector<store::NodeRecord>& nodes,
                              const std::string& incarnation) {
    for (const auto& node : nodes) {
        if (node.incarnation == incarnation) return &node;
    }
    return nullptr;
}

}  // namespace

TEST_CASE("a beat refreshes our heartbeat and renews every lease we hold, expired ones too",
          "[pg][store]") {
    TestDatabase db;
    store::ClusterStore cluster{db.url()};
    const ShardRanges first{{{0, 99}, {500, 511}}};
    const ShardRanges second{{{100, 499}}};
    cluster.register_node("node-a", "node-a/1", "ws://a");
    cluster.register_node("node-b", "node-b/1", "ws://b");
    cluster.register_node("node-c", "node-c/1", "ws://c");
    REQUIRE(cluster.acquire_shards("node-a/1", first, 2s) == first);
    REQUIRE(cluster.acquire_shards("node-b/1", second, 2s) == second);
    // As after an outage: our heartbeat is old and some of our leases lapsed (nobody took
    // them); node-c's heartbeat is old too.
    db.exec(
        "UPDATE dispatcher_nodes SET heartbeat_at = now() - interval '1 hour'"
        " WHERE node_id IN ('node-a', 'node-c')");
    db.exec(
        "UPDATE shard_leases SET expires_at = now() - interval '1 second'"
        " WHERE owner = 'node-a/1' AND shard >= 500");
    REQUIRE(cluster.live_nodes(60s).size() == 1);

    const auto held = cluster.beat("node-a/1", true, 60s);
    REQUIRE(held.has_value());
    CHECK(*held == first);
    // Renewed by the database clock for the TTL given.
    CHECK(db.exec("SELECT count(*) FROM shard_leases WHERE owner = 'node-a/1'"
                  " AND expires_at > now() + interval '50 seconds'")[0][0]
              .as<int>() == 112);
    CHECK(db.exec("SELECT count(*) FROM shard_leases WHERE owner = 'node-b/1'"
                  " AND expires_at < now() + interval '5 seconds'")[0][0]
              .as<int>() == 400);  // not ours: untouched
    const auto nodes = cluster.live_nodes(60s);
    REQUIRE(nodes.size() == 2);
    CHECK(nodes[0].node_id == "node-a");
    CHECK(nodes[0].draining);  // as this beat said
    CHECK(nodes[0].shards == first);
    CHECK(nodes[1].node_id == "node-b");
    CHECK(nodes[1].advertise_url == "ws://b");
    CHECK_FALSE(nodes[1].draining);
    CHECK(nodes[1].shards == second);
    CHECK(find(nodes, "node-c/1") == nullptr);
}

TEST_CASE("a beat whose row was replaced renews nothing and says so", "[pg][store]") {
    TestDatabase db;
    store::ClusterStore cluster{db.url()};
    cluster.register_node("node-a", "node-a/1", "ws://a");
    const ShardRanges some{{{0, 9}}};
    REQUIRE(cluster.acquire_shards("node-a/1", some, 1s) == some);
    cluster.register_node("node-a", "node-a/2", "ws://a");  // a restart took the node id

    CHECK_FALSE(cluster.beat("node-a/1", false, 60s).has_value());
    CHECK(db.exec("SELECT count(*) FROM shard_leases WHERE owner = 'node-a/1'"
                  " AND expires_at > now() + interval '50 seconds'")[0][0]
              .as<int>() == 0);
    const auto held = cluster.beat("node-a/2", false, 60s);
    REQUIRE(held.has_value());
    CHECK(held->empty());
    CHECK(find(cluster.live_nodes(60s), "node-a/1") == nullptr);
}

}  // namespace outboxd::test
