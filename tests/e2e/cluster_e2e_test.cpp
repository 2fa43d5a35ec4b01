// Horizontal scale with real processes: membership, shard ranges, joins, kill -9, drain,
// and a node cut off from PostgreSQL.

#include <algorithm>
#include <csignal>
#include <cstdint>
#include <fstream>
#include <map>
#include <set>
#include <thread>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <pqxx/pqxx>

#include "e2e_cluster.hpp"
#include "outboxd/store/migrator.hpp"
#include "tcp_proxy.hpp"

using namespace outboxd;
using namespace std::chrono_literals;
using nlohmann::json;
using test::E2eCluster;

namespace {

constexpr auto kLeaseTtlMs = 1000;

std::map<std::string, std::string> node_env(int lease_ttl_ms = kLeaseTtlMs) {
    return {{"OUTBOXD_LEASE_TTL_MS", std::to_string(lease_ttl_ms)},
            {"OUTBOXD_POLL_INTERVAL_MS", "200"}};
}

json cluster_view(const test::NodeHandle& node) {
    return json::parse(test::http_call(node.port, "GET", "/v1/cluster").body);
}

// dispatch_key -> deliveries, over the received logs of every worker.
std::map<std::string, int> deliveries(const std::vector<std::string>& logs) {
    std::map<std::string, int> count;
    for (const auto& path : logs) {
        std::ifstream in{path};
        for (std::string line; std::getline(in, line);) {
            if (line.empty()) continue;
            ++count[line.substr(0, line.rfind(':'))];
        }
    }
    return count;
}

void stage(E2eCluster& cluster, int from, int count, const std::string& input) {
    cluster.db.exec(
        "INSERT INTO outbox (workflow_id, ordinal, activity_type, input) SELECT 'wf-' || g, 0, "
        "'sleep', '" +
        input + "' FROM generate_series(" + std::to_string(from) + ", " +
        std::to_string(from + count - 1) + ") g");
}

std::vector<std::string> start_workers(E2eCluster& cluster, const test::NodeHandle& seed, int count,
                                       const std::string& credit = "64") {
    std::vector<std::string> logs;
    for (int i = 1; i <= count; ++i) {
        const auto name = "w" + std::to_string(i);
        logs.push_back(cluster.dir() + "/" + name + ".received");
        cluster.start_worker(name, {seed.worker_url()},
                             {"--activity-types", "sleep", "--max-in-flight", credit,
                              "--received-log", logs.back()});
    }
    return logs;
}

}  // namespace

TEST_CASE("three nodes started together migrate once and partition the shards", "[e2e][cluster]") {
    E2eCluster cluster{"together", /*migrated=*/false};
    std::vector<test::NodeHandle*> nodes;
    for (int i = 1; i <= 3; ++i)
        nodes.push_back(&cluster.launch_node("node-" + std::to_string(i), node_env()));
    for (auto* node : nodes) cluster.await_ready(*node);

    const auto migrations = static_cast<int>(store::bundled_migrations().size());
    CHECK(cluster.db.exec("SELECT count(*) FROM schema_migrations")[0][0].as<int>() == migrations);
    int applied = 0;
    for (auto* node : nodes) {
        const auto log = node->process->log();
        const auto at = log.find("event=migrated");
        REQUIRE(at != std::string::npos);
        applied += std::stoi(log.substr(log.find("applied=", at) + 8));
    }
    CHECK(applied == migrations);  // each migration applied by exactly one node

    // No overlap and no gap, balanced, within a few lease periods. Each node refreshes its
    // view of the others once per tick, so wait until every node's view has settled.
    REQUIRE(E2eCluster::await(
        [&] {
            return std::all_of(nodes.begin(), nodes.end(),
                               [](const auto* node) { return test::balanced_over(*node, 3); });
        },
        10s));
    for (auto* node : nodes) CHECK(cluster_view(*node)["nodes"].size() == 3);
    CHECK(cluster.db.exec("SELECT count(DISTINCT owner) FROM live_shard_leases")[0][0].as<int>() ==
          3);
}

TEST_CASE("a fourth node joins under load: ranges rebalance and every row is delivered once",
          "[e2e][cluster]") {
    E2eCluster cluster{"join"};
    cluster.audit_claims();
    auto& first = cluster.start_node("node-1", node_env());
    cluster.start_node("node-2", node_env());
    cluster.start_node("node-3", node_env());
    REQUIRE(E2eCluster::await([&] { return test::balanced_over(first, 3); }, 10s));
    const auto logs = start_workers(cluster, first, 2);

    stage(cluster, 0, 3000, R"({"ms": 5})");
    REQUIRE(E2eCluster::await([&] { return cluster.count("status = 'done'") > 500; }, 30s));
    cluster.start_node("node-4", node_env());
    stage(cluster, 3000, 3000, R"({"ms": 5})");
    REQUIRE(E2eCluster::await([&] { return test::balanced_over(first, 4); }, 15s));
    stage(cluster, 6000, 3000, R"({"ms": 5})");
    REQUIRE(E2eCluster::await([&] { return cluster.count("status = 'done'") == 9000; }, 90s));

    const auto delivered = deliveries(logs);
    CHECK(delivered.size() == 9000);
    int duplicates = 0;
    for (const auto& [key, count] : delivered) duplicates += count > 1 ? 1 : 0;
    CHECK(duplicates == 0);
    // The newcomer took its share of the work.
    CHECK(cluster.db
              .exec("SELECT count(*) FROM claim_audit WHERE kind = 'claim' AND claimed_by LIKE "
                    "'node-4/%'")[0][0]
              .as<int>() > 0);
    // No row was ever claimed while a claim of it was open (claimed_by history).
    CHECK(cluster.overlapping_claims() == 0);
    CHECK(
        cluster.db.exec("SELECT count(*) FROM claim_audit WHERE kind = 'claim'")[0][0].as<int>() >=
        9000);
}

TEST_CASE("kill -9 of one of three nodes under load: nothing is lost, failover is fast",
          "[e2e][cluster]") {
    constexpr int kRows = 20000;
    constexpr int kTtlMs = 2000;
    E2eCluster cluster{"kill"};
    cluster.audit_claims();
    auto& first = cluster.start_node("node-1", node_env(kTtlMs));
    auto& victim = cluster.start_node("node-2", node_env(kTtlMs));
    cluster.start_node("node-3", node_env(kTtlMs));
    REQUIRE(E2eCluster::await([&] { return test::balanced_over(first, 3); }, 15s));
    const auto logs = start_workers(cluster, first, 2);
    REQUIRE(E2eCluster::await(
        [&] {
            return test::http_call(victim.port, "GET", "/metrics")
                       .body.find("outboxd_workers_connected 2") != std::string::npos;
        },
        15s));

    stage(cluster, 0, kRows, R"({"ms": 20})");
    REQUIRE(E2eCluster::await(
        [&] {
            return cluster.db
                           .exec(
                               "SELECT count(*) FROM outbox WHERE status = 'done' AND claimed_by "
                               "IS NULL")[0][0]
                           .as<int>() > kRows / 4 &&
                   cluster.db
                           .exec(
                               "SELECT count(*) FROM outbox WHERE status = 'claimed' AND "
                               "claimed_by LIKE 'node-2/%'")[0][0]
                           .as<int>() > 0;
        },
        60s));
    victim.process->signal(SIGKILL);
    const auto killed_at = cluster.db_now();
    REQUIRE(victim.process->wait(10s));
    const auto in_flight = cluster.db.exec(
        "SELECT dispatch_key FROM outbox WHERE status = 'claimed' AND claimed_by LIKE 'node-2/%'");
    std::set<std::string> stranded;
    for (const auto& r : in_flight) stranded.insert(r[0].as<std::string>());

    REQUIRE(E2eCluster::await([&] { return cluster.count("status = 'done'") == kRows; }, 180s));
    CHECK(cluster.count("status <> 'done'") == 0);

    // Duplicate deliveries only for rows that were in flight on the killed node.
    const auto delivered = deliveries(logs);
    CHECK(delivered.size() == static_cast<std::size_t>(kRows));
    int duplicates = 0;
    for (const auto& [key, count] : delivered) {
        if (count > 1) {
            ++duplicates;
            CHECK(stranded.contains(key));
        }
    }
    // Time from the kill to the first re-dispatch of a stranded row.
    const auto failover = cluster.db.exec("SELECT extract(epoch FROM min(a.at) - '" + killed_at +
                                          "'::timestamptz) FROM claim_audit a "
                                          "WHERE a.kind = 'claim' AND a.at > '" +
                                          killed_at +
                                          "'::timestamptz AND a.row_id IN "
                                          "(SELECT row_id FROM claim_audit WHERE claimed_by LIKE "
                                          "'node-2/%') AND a.claimed_by NOT LIKE 'node-2/%'");
    REQUIRE_FALSE(failover[0][0].is_null());
    const double seconds = failover[0][0].as<double>();
    const auto timeline = cluster.db.exec(
        "SELECT claimed_by, min(at)::text, max(at)::text, count(*) FROM claim_audit WHERE kind = "
        "'claim' AND row_id IN "
        "(SELECT row_id FROM claim_audit WHERE claimed_by LIKE 'node-2/%' GROUP BY row_id HAVING "
        "count(*) >= 1) "
        "AND at > '" +
        killed_at + "'::timestamptz GROUP BY 1");
    for (const auto& r : timeline) {
        UNSCOPED_INFO("after kill at " << killed_at << ": " << r[0].c_str() << " first "
                                       << r[1].c_str() << " last " << r[2].c_str() << " claims "
                                       << r[3].c_str());
    }
    WARN("kill -9 under load: " << stranded.size() << " rows in flight on the killed node, "
                                << duplicates << " delivered twice; first re-dispatch " << seconds
                                << " s after the kill (lease TTL " << kTtlMs / 1000.0 << " s)");
    // Bounded by the lease TTL plus one cluster tick (TTL/3), one reconcile and one sweep.
    CHECK(seconds < kTtlMs / 1000.0 + kTtlMs / 3000.0 + 1.0);
    CHECK(duplicates <= static_cast<int>(stranded.size()));
    CHECK(cluster.overlapping_claims() == 0);
}

namespace {

using Owners = std::map<std::string, std::set<int>>;  // node id -> shards its live lease holds

Owners live_owners(pqxx::connection& conn) {
    Owners owners;
    pqxx::nontransaction tx{conn};
    for (const auto& row :
         tx.exec("SELECT split_part(owner, '/', 1), shard FROM live_shard_leases")) {
        owners[row[0].as<std::string>()].insert(row[1].as<int>());
    }
    return owners;
}

bool held_by_all_of(const Owners& owners, const std::set<std::string>& nodes) {
    std::size_t shards = 0;
    for (const auto& [node, held] : owners) {
        if (!nodes.contains(node)) return false;
        shards += held.size();
    }
    return shards == 1024;
}

bool balanced_over(const Owners& owners, std::size_t members) {
    if (owners.size() != members) return false;
    const auto share = static_cast<std::size_t>(1024 / members);
    return std::all_of(owners.begin(), owners.end(), [&](const auto& entry) {
        return entry.second.size() >= share && entry.second.size() <= share + 1;
    });
}

std::int64_t epochs(pqxx::connection& conn) {
    return pqxx::nontransaction{conn}
        .exec("SELECT sum(epoch) FROM shard_leases")[0][0]
        .as<std::int64_t>();
}

struct Takeover {
    double seconds = -1;    // from the kill until every shard was held by a survivor
    int freed = 0;          // shards the killed nodes held
    int changed_hands = 0;  // shards that got a new owner until balanced again
    bool survivors_kept_all = false;
};

// Kills `victims` with SIGKILL at once and times, on a connection of its own polling every
// 10 ms, until the survivors hold every shard; then waits until they are balanced.
Takeover kill_and_time(E2eCluster& cluster, const std::vector<test::NodeHandle*>& victims,
                       std::set<std::string>& members) {
    pqxx::connection conn{cluster.db.url()};
    const auto before = live_owners(conn);
    const auto epochs_before = epochs(conn);
    Takeover result;
    for (auto* victim : victims) {
        result.freed += static_cast<int>(before.at(victim->name).size());
        members.erase(victim->name);
    }
    for (auto* victim : victims) victim->process->signal(SIGKILL);
    const auto killed_at = std::chrono::steady_clock::now();
    while (std::chrono::steady_clock::now() - killed_at < 30s) {
        if (held_by_all_of(live_owners(conn), members)) {
            result.seconds =
                std::chrono::duration<double>(std::chrono::steady_clock::now() - killed_at).count();
            break;
        }
        std::this_thread::sleep_for(10ms);
    }
    for (auto* victim : victims) victim->process->wait(10s);
    REQUIRE(
        E2eCluster::await([&] { return balanced_over(live_owners(conn), members.size()); }, 15s));
    const auto after = live_owners(conn);
    result.survivors_kept_all = std::all_of(members.begin(), members.end(), [&](const auto& id) {
        return std::includes(after.at(id).begin(), after.at(id).end(), before.at(id).begin(),
                             before.at(id).end());
    });
    result.changed_hands = static_cast<int>(epochs(conn) - epochs_before);
    return result;
}

}  // namespace

TEST_CASE(
    "kill -9 of a quarter of the nodes, then of one: every shard they held is owned again "
    "within the lease TTL plus one tick, and no survivor gives up a shard",
    "[e2e][cluster]") {
    constexpr int kTtlMs = 2000;
    constexpr double kBound = kTtlMs / 1000.0 + kTtlMs / 3000.0;  // the TTL and one tick
    // What polling adds to a measured time: one 10 ms poll and its query.
    constexpr double kMeasurement = 0.05;
    E2eCluster cluster{"takeover"};
    std::set<std::string> members;
    std::vector<test::NodeHandle*> nodes;
    for (int i = 1; i <= 8; ++i) {
        const auto name = "node-" + std::to_string(i);
        nodes.push_back(&cluster.start_node(name, node_env(kTtlMs)));
        members.insert(name);
    }
    pqxx::connection conn{cluster.db.url()};
    REQUIRE(E2eCluster::await([&] { return balanced_over(live_owners(conn), 8); }, 20s));

    const auto quarter = kill_and_time(cluster, {nodes[2], nodes[5]}, members);
    const auto one = kill_and_time(cluster, {nodes[0]}, members);
    WARN("lease TTL " << kTtlMs << " ms, bound " << kBound << " s: 2 of 8 killed, " << quarter.freed
                      << " shards owned again after " << quarter.seconds << " s ("
                      << quarter.changed_hands << " changed hands); 1 of 6 killed, " << one.freed
                      << " shards after " << one.seconds << " s (" << one.changed_hands
                      << " changed hands)");
    for (const auto* takeover : {&quarter, &one}) {
        CHECK(takeover->seconds > 0);
        CHECK(takeover->seconds <= kBound + kMeasurement);
        CHECK(takeover->survivors_kept_all);
        CHECK(takeover->changed_hands == takeover->freed);  // each freed shard moved once
    }
}

TEST_CASE("SIGTERM drain under load delivers nothing twice", "[e2e][cluster]") {
    constexpr int kRows = 8000;
    E2eCluster cluster{"drain-load"};
    auto& first = cluster.start_node("node-1", node_env());
    auto& leaving = cluster.start_node("node-2", node_env());
    cluster.start_node("node-3", node_env());
    REQUIRE(E2eCluster::await([&] { return test::balanced_over(first, 3); }, 10s));
    const auto logs = start_workers(cluster, first, 2);
    stage(cluster, 0, kRows, R"({"ms": 10})");
    REQUIRE(E2eCluster::await([&] { return cluster.count("status = 'done'") > kRows / 4; }, 60s));
    leaving.process->signal(SIGTERM);
    const auto code = leaving.process->wait(40s);
    REQUIRE(code);
    CHECK(*code == 0);
    REQUIRE(E2eCluster::await([&] { return test::balanced_over(first, 2); }, 10s));
    REQUIRE(E2eCluster::await([&] { return cluster.count("status = 'done'") == kRows; }, 120s));
    const auto delivered = deliveries(logs);
    CHECK(delivered.size() == static_cast<std::size_t>(kRows));
    int duplicates = 0;
    for (const auto& [key, count] : delivered) duplicates += count > 1 ? 1 : 0;
    CHECK(duplicates == 0);
    CHECK(cluster.count("attempt <> 0") == 0);
}

TEST_CASE("a node cut off from PostgreSQL loses its shards and rejoins cleanly", "[e2e][cluster]") {
    E2eCluster cluster{"partition"};
    cluster.audit_claims();
    test::TcpProxy proxy{E2eCluster::pg_port()};
    const auto proxied_url = cluster.url_via(proxy.port());

    auto& first = cluster.start_node("node-1", node_env());
    cluster.start_node("node-2", node_env());
    auto env = node_env();
    env["OUTBOXD_DATABASE_URL"] = proxied_url;
    auto& island = cluster.start_node("node-3", env);
    REQUIRE(E2eCluster::await([&] { return test::balanced_over(first, 3); }, 10s));
    const auto logs = start_workers(cluster, first, 2);
    stage(cluster, 0, 1000, R"({"ms": 1})");
    REQUIRE(E2eCluster::await([&] { return cluster.count("status = 'done'") == 1000; }, 60s));

    proxy.cut();
    const auto cut_at = cluster.db_now();
    // The others see it go and take its ranges once its leases lapse.
    REQUIRE(E2eCluster::await([&] { return test::balanced_over(first, 2); }, 15s));
    stage(cluster, 1000, 1000, R"({"ms": 1})");
    REQUIRE(E2eCluster::await([&] { return cluster.count("status = 'done'") == 2000; }, 60s));
    // Cut off, it claimed nothing after its lease lapsed.
    CHECK(cluster.db
              .exec("SELECT count(*) FROM claim_audit WHERE kind = 'claim' AND claimed_by LIKE "
                    "'node-3/%' AND at > '" +
                    cut_at + "'::timestamptz + interval '" + std::to_string(kLeaseTtlMs) +
                    " milliseconds'")[0][0]
              .as<int>() == 0);
    CHECK(island.process->running());  // it waits for the database, it does not die

    proxy.restore();
    REQUIRE(E2eCluster::await([&] { return test::balanced_over(first, 3); }, 20s));
    stage(cluster, 2000, 1000, R"({"ms": 1})");
    REQUIRE(E2eCluster::await([&] { return cluster.count("status = 'done'") == 3000; }, 60s));
    // Back in the cluster, it dispatches its share of the new rows.
    CHECK(cluster.db
              .exec("SELECT count(*) FROM claim_audit WHERE kind = 'claim' AND claimed_by LIKE "
                    "'node-3/%' "
                    "AND at > '" +
                    cut_at + "'::timestamptz")[0][0]
              .as<int>() > 0);
    CHECK(cluster.overlapping_claims() == 0);
    const auto delivered = deliveries(logs);
    CHECK(delivered.size() == 3000);
    int duplicates = 0;
    for (const auto& [key, count] : delivered) duplicates += count > 1 ? 1 : 0;
    CHECK(duplicates == 0);  // nothing was in flight on it when it was cut
    // After rejoining it claims again, under a new lease.
    CHECK(E2eCluster::await(
        [&] {
            return cluster.db
                       .exec(
                           "SELECT count(*) FROM live_shard_leases WHERE owner LIKE 'node-3/%'")[0]
                                                                                                [0]
                       .as<int>() > 300;
        },
        10s));
}

TEST_CASE("back from an outage of PostgreSQL, no node takes the shards of the others coming back",
          "[e2e][cluster]") {
    E2eCluster cluster{"outage"};
    test::TcpProxy to_first{E2eCluster::pg_port()};
    test::TcpProxy to_second{E2eCluster::pg_port()};
    auto env = node_env();
    env["OUTBOXD_DATABASE_URL"] = cluster.url_via(to_first.port());
    auto& first = cluster.start_node("node-1", env);
    env["OUTBOXD_DATABASE_URL"] = cluster.url_via(to_second.port());
    auto& second = cluster.start_node("node-2", env);
    REQUIRE(E2eCluster::await([&] { return test::balanced_over(first, 2); }, 10s));
    // Every change of a shard's owner bumps its epoch.
    const auto epochs = [&] {
        return cluster.db.exec("SELECT sum(epoch) FROM shard_leases")[0][0].as<std::int64_t>();
    };
    const auto before = epochs();

    // Both cut off for longer than the lease TTL: every lease and heartbeat lapses.
    to_first.cut();
    to_second.cut();
    std::this_thread::sleep_for(std::chrono::milliseconds{kLeaseTtlMs * 5 / 2});
    to_first.restore();
    to_second.restore();
    REQUIRE(first.process->await_log("event=cluster_tick_recovered", 10s));
    REQUIRE(second.process->await_log("event=cluster_tick_recovered", 10s));
    // Whichever came back first kept its own shards and waited for the other.
    REQUIRE(E2eCluster::await([&] { return test::balanced_over(first, 2); }, 10s));
    std::this_thread::sleep_for(std::chrono::milliseconds{kLeaseTtlMs * 2});
    CHECK(test::balanced_over(second, 2));
    CHECK(epochs() == before);
    CHECK(first.process->log().find("settling=true") != std::string::npos);
}

TEST_CASE("workers follow a node that restarts on another port", "[e2e][cluster]") {
    E2eCluster cluster{"new-port"};
    auto& first = cluster.start_node("node-1", node_env());
    auto& second = cluster.start_node("node-2", node_env());
    REQUIRE(E2eCluster::await([&] { return test::balanced_over(first, 2); }, 10s));
    // Seeded with both, as a deployment lists its nodes: a seed is never dropped, so the
    // old URL stays known under node-1's id.
    for (const auto* name : {"w1", "w2"}) {
        cluster.start_worker(name, {first.worker_url(), second.worker_url()},
                             {"--activity-types", "sleep", "--max-in-flight", "64"});
    }
    REQUIRE(E2eCluster::await(
        [&] { return E2eCluster::metric(first, "outboxd_workers_connected") == 2.0; }, 10s));

    first.process->signal(SIGKILL);
    REQUIRE(first.process->wait(5s));
    REQUIRE(E2eCluster::await([&] { return test::balanced_over(second, 1); }, 15s));
    // Same node id, a new port (listen :0): its old URL leads nowhere now.
    auto env = node_env();
    env["OUTBOXD_NODE_ID"] = "node-1";
    auto& again = cluster.start_node("node-1-again", env);
    REQUIRE(again.port != first.port);
    REQUIRE(E2eCluster::await([&] { return test::balanced_over(second, 2); }, 15s));
    CHECK(E2eCluster::await(
        [&] { return E2eCluster::metric(again, "outboxd_workers_connected") == 2.0; }, 15s));
    // Rows on the restarted node's shards are delivered there.
    cluster.db.exec(
        "INSERT INTO outbox (workflow_id, ordinal, activity_type, input) SELECT 'np-' || g, 0, "
        "'sleep', '{\"ms\": 1}' FROM generate_series(1, 400) g");
    CHECK(E2eCluster::await([&] { return cluster.count("status = 'done'") == 400; }, 30s));
}

TEST_CASE("a node taking over a dead node's shards settles rows of cancelled workflows there",
          "[e2e][cluster]") {
    E2eCluster cluster{"takeover-cancel"};
    auto& first = cluster.start_node("node-1", node_env());
    auto& second = cluster.start_node("node-2", node_env());
    REQUIRE(E2eCluster::await([&] { return test::balanced_over(first, 2); }, 10s));
    // A workflow whose shard node-1 owns.
    const auto view = cluster_view(first);
    std::vector<std::pair<int, int>> first_ranges;
    for (const auto& node : view["nodes"]) {
        if (node["node_id"] != "node-1") continue;
        for (const auto& range : node["shards"])
            first_ranges.emplace_back(range[0].get<int>(), range[1].get<int>());
    }
    std::string workflow;
    for (int i = 0; workflow.empty() && i < 10000; ++i) {
        const auto candidate = "cancelled-" + std::to_string(i);
        const auto shard =
            cluster.db.exec("SELECT outbox_shard('" + candidate + "')")[0][0].as<int>();
        for (const auto& [lo, hi] : first_ranges) {
            if (shard >= lo && shard <= hi) workflow = candidate;
        }
    }
    REQUIRE_FALSE(workflow.empty());
    REQUIRE(test::http_call(second.port, "POST", "/v1/workflows/" + workflow + "/cancel").status ==
            200);

    first.process->signal(SIGKILL);
    REQUIRE(first.process->wait(5s));
    // Staged after the cancel, while their shard has no live owner.
    cluster.db.exec("INSERT INTO outbox (workflow_id, ordinal, activity_type, input) SELECT '" +
                    workflow + "', g, 'sleep', '{\"ms\": 1}' FROM generate_series(0, 9) g");
    const auto log = cluster.dir() + "/w1.received";
    cluster.start_worker("w1", {second.worker_url()},
                         {"--activity-types", "sleep", "--received-log", log});
    REQUIRE(E2eCluster::await([&] { return test::balanced_over(second, 1); }, 15s));
    CHECK(E2eCluster::await(
        [&] {
            return cluster.count("workflow_id = '" + workflow + "' AND status = 'cancelled'") == 10;
        },
        10s));
    for (const auto& line : test::received(log)) CHECK(line.rfind(workflow + ":", 0) != 0);
    CHECK(E2eCluster::await(
        [&] {
            return E2eCluster::metric(
                       second,
                       "outboxd_outcomes_total{namespace=\"default\",outcome=\"cancelled\"}")
                       .value_or(0) >= 10.0;
        },
        10s));
}
