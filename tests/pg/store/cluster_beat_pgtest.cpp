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

TEST_CASE("a beat renews our lease in our row alone and returns the shards we own", "[pg][store]") {
    TestDatabase db;
    store::ClusterStore cluster{db.url()};
    const ShardRanges first{{{0, 99}, {500, 511}}};
    const ShardRanges second{{{100, 499}}};
    cluster.register_node("node-a", "node-a/1", "ws://a");
    cluster.register_node("node-b", "node-b/1", "ws://b");
    cluster.register_node("node-c", "node-c/1", "ws://c");
    // A new incarnation's lease starts with its first beat.
    CHECK(cluster.live_nodes().empty());
    REQUIRE(cluster.beat("node-a/1", false, 60s) == ShardRanges::none());
    REQUIRE(cluster.beat("node-b/1", false, 60s) == ShardRanges::none());
    REQUIRE(cluster.beat("node-c/1", false, 60s) == ShardRanges::none());
    REQUIRE(cluster.acquire_shards("node-a/1", first) == first);
    REQUIRE(cluster.acquire_shards("node-b/1", second) == second);
    // As after an outage: node-a's and node-c's leases lapsed; nobody took node-a's shards.
    db.exec(
        "UPDATE dispatcher_nodes SET lease_expires_at = now() - interval '1 second'"
        " WHERE node_id IN ('node-a', 'node-c')");
    REQUIRE(cluster.live_nodes().size() == 1);
    CHECK(db.exec("SELECT count(*) FROM live_shard_leases")[0][0].as<int>() == 400);
    // Row versions of shard_leases: a beat writes none.
    const auto versions = [&] {
        return db.exec("SELECT string_agg(xmin::text, ',' ORDER BY shard) FROM shard_leases")[0][0]
            .as<std::string>();
    };
    const auto versions_before = versions();

    const auto held = cluster.beat("node-a/1", true, 60s);
    REQUIRE(held.has_value());
    CHECK(*held == first);
    // Renewed by the database clock for the TTL given, in node-a's row alone.
    CHECK(db.exec("SELECT count(*) FROM dispatcher_nodes WHERE node_id = 'node-a'"
                  " AND lease_expires_at > now() + interval '50 seconds'")[0][0]
              .as<int>() == 1);
    CHECK(db.exec("SELECT count(*) FROM dispatcher_nodes WHERE node_id = 'node-b'"
                  " AND lease_expires_at < (SELECT lease_expires_at FROM dispatcher_nodes"
                  "                         WHERE node_id = 'node-a')")[0][0]
              .as<int>() == 1);  // not ours: untouched
    CHECK(db.exec("SELECT count(*) FROM live_shard_leases WHERE node_id = 'node-a'"
                  " AND expires_at > now() + interval '50 seconds'")[0][0]
              .as<int>() == 112);
    CHECK(versions() == versions_before);
    const auto nodes = cluster.live_nodes();
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

TEST_CASE("shards of a lapsed lease go to whoever asks; a live owner's stay", "[pg][store]") {
    TestDatabase db;
    store::ClusterStore cluster{db.url()};
    const ShardRanges half{{{0, 511}}};
    cluster.register_node("node-a", "node-a/1", "ws://a");
    cluster.register_node("node-b", "node-b/1", "ws://b");
    REQUIRE(cluster.beat("node-a/1", false, 60s));
    REQUIRE(cluster.beat("node-b/1", false, 60s));
    REQUIRE(cluster.acquire_shards("node-a/1", half) == half);
    CHECK(cluster.acquire_shards("node-b/1", ShardRanges::all()) == ShardRanges{{{512, 1023}}});
    const auto epoch = [&] {
        return db.exec("SELECT epoch FROM shard_leases WHERE shard = 7")[0][0].as<long>();
    };
    const auto before = epoch();
    db.exec(
        "UPDATE dispatcher_nodes SET lease_expires_at = now() - interval '1 second'"
        " WHERE node_id = 'node-a'");
    CHECK(cluster.acquire_shards("node-b/1", half) == half);
    CHECK(epoch() == before + 1);  // a change of hands
    CHECK(cluster.beat("node-a/1", false, 60s) == ShardRanges::none());
    // Released shards are free at once.
    cluster.release_shards("node-b/1", ShardRanges{{{0, 9}}});
    CHECK(cluster.acquire_shards("node-a/1", ShardRanges{{{0, 20}}}) == ShardRanges{{{0, 9}}});
}

TEST_CASE("a beat whose row was replaced renews nothing and says so", "[pg][store]") {
    TestDatabase db;
    store::ClusterStore cluster{db.url()};
    cluster.register_node("node-a", "node-a/1", "ws://a");
    REQUIRE(cluster.beat("node-a/1", false, 60s));
    const ShardRanges some{{{0, 9}}};
    REQUIRE(cluster.acquire_shards("node-a/1", some) == some);
    cluster.register_node("node-a", "node-a/1", "ws://a");  // the same incarnation: lease kept
    CHECK(cluster.live_nodes().size() == 1);
    cluster.register_node("node-a", "node-a/2", "ws://a");  // a restart took the node id

    CHECK_FALSE(cluster.beat("node-a/1", false, 60s).has_value());
    CHECK(cluster.live_nodes().empty());  // the new incarnation has not beaten yet
    CHECK(db.exec("SELECT count(*) FROM live_shard_leases")[0][0].as<int>() == 0);
    const auto held = cluster.beat("node-a/2", false, 60s);
    REQUIRE(held.has_value());
    CHECK(held->empty());
    // node-a/1's shards have no live owner: free.
    CHECK(cluster.acquire_shards("node-a/2", some) == some);
    CHECK(find(cluster.live_nodes(), "node-a/1") == nullptr);
}

TEST_CASE("the live nodes say how long each one's lease has left, by the database clock",
          "[pg][store]") {
    TestDatabase db;
    store::ClusterStore cluster{db.url()};
    cluster.register_node("node-a", "node-a/1", "ws://a");
    cluster.register_node("node-b", "node-b/1", "ws://b");
    REQUIRE(cluster.beat("node-a/1", false, 60s));
    REQUIRE(cluster.beat("node-b/1", false, 60s));
    // node-b missed renewals: 700 ms of its lease left.
    db.exec(
        "UPDATE dispatcher_nodes SET lease_expires_at = now() + interval '700 milliseconds'"
        " WHERE node_id = 'node-b'");
    const auto nodes = cluster.live_nodes();
    REQUIRE(nodes.size() == 2);
    CHECK(nodes[0].lease_left > 59s);
    CHECK(nodes[0].lease_left <= 60s);
    CHECK(nodes[1].lease_left > 0ms);
    CHECK(nodes[1].lease_left <= 700ms);
}

}  // namespace outboxd::test
