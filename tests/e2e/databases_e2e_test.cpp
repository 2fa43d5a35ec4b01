// Several outbox databases served by the same nodes (README, "Several databases"), with real
// processes and two real PostgreSQL servers: `orders` and `billing` on the suite's shared
// server, `shipping` on a server of the test's own that a test stops for real.

#include <algorithm>
#include <csignal>
#include <functional>
#include <map>
#include <numeric>
#include <optional>
#include <set>
#include <sstream>
#include <thread>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "e2e_cluster.hpp"
#include "multi_database.hpp"
#include "outboxd/store/migrator.hpp"
#include "pg_instance.hpp"

using namespace outboxd;
using namespace std::chrono_literals;
using nlohmann::json;
using test::E2eCluster;
using test::MultiDatabaseCluster;
using test::NodeHandle;

namespace {

using Clock = std::chrono::steady_clock;

constexpr int kLeaseTtlMs = 2000;

std::map<std::string, std::string> node_env(int lease_ttl_ms = kLeaseTtlMs) {
    return {{"OUTBOXD_LEASE_TTL_MS", std::to_string(lease_ttl_ms)},
            {"OUTBOXD_POLL_INTERVAL_MS", "200"}};
}

double seconds_since(Clock::time_point from) {
    return std::chrono::duration<double>(Clock::now() - from).count();
}

// `orders` and `billing` on the shared server, `shipping` on a second server of the test's
// own. Members in declaration order: the second server outlives the database on it.
struct ThreeDatabases {
    ThreeDatabases(const std::string& name, bool migrated)
        : second(test::scratch_dir(name + "-pg")),
          orders(migrated),
          billing(migrated),
          shipping(second.url(), "shipping") {
        if (migrated) store::migrate(shipping.url());
    }

    [[nodiscard]] std::vector<test::ServedDatabase> served() const {
        return {{"orders", orders.url()}, {"billing", billing.url()}, {"shipping", shipping.url()}};
    }

    test::PgInstance second;
    test::TestDatabase orders;
    test::TestDatabase billing;
    test::ServerDatabase shipping;
};

// Lines "event=migrated database=<name> … applied=<n>" of a node's log: each n.
std::vector<int> migrated_lines(const std::string& log, const std::string& database) {
    std::vector<int> applied;
    const std::string marker = "event=migrated database=" + database + " ";
    for (auto at = log.find(marker); at != std::string::npos; at = log.find(marker, at + 1)) {
        const auto end = log.find('\n', at);
        const auto line = log.substr(at, end == std::string::npos ? end : end - at);
        const auto field = line.find("applied=");
        applied.push_back(field == std::string::npos ? -1 : std::stoi(line.substr(field + 8)));
    }
    return applied;
}

}  // namespace

TEST_CASE(
    "three nodes serving three databases on two servers migrate each once and partition "
    "each one's shards",
    "[e2e][databases]") {
    ThreeDatabases dbs{"mdb-together", /*migrated=*/false};
    MultiDatabaseCluster cluster{"mdb-together", dbs.served()};
    std::vector<NodeHandle*> nodes;
    for (int i = 1; i <= 3; ++i)
        nodes.push_back(&cluster.launch_node("node-" + std::to_string(i), node_env()));
    for (auto* node : nodes) cluster.await_ready(*node);

    const auto migrations = static_cast<int>(store::bundled_migrations().size());
    for (const auto& database : cluster.databases()) {
        INFO("database " << database.name);
        // One line per node for each database; one node applied every migration.
        std::vector<int> applied;
        for (const auto* node : nodes) {
            const auto lines = migrated_lines(node->process->log(), database.name);
            CHECK(lines.size() == 1);
            applied.insert(applied.end(), lines.begin(), lines.end());
        }
        CHECK(std::count_if(applied.begin(), applied.end(), [](int n) { return n > 0; }) == 1);
        CHECK(std::accumulate(applied.begin(), applied.end(), 0) == migrations);
        CHECK(
            test::exec_on(database.url, "SELECT count(*) FROM schema_migrations")[0][0].as<int>() ==
            migrations);
    }

    // In each database: every shard leased, once, to one of the three, in three contiguous
    // near-equal ranges; and every node's view of every database says the same.
    const std::set<std::string> members{"node-1", "node-2", "node-3"};
    const auto settled = [&] {
        for (const auto& database : cluster.databases()) {
            const auto cover = test::lease_cover(database.url);
            if (!cover.balanced(3) || !cover.covered_by(members)) return false;
            for (const auto* node : nodes) {
                const auto view =
                    json::parse(test::http_call(node->port, "GET", "/v1/cluster").body);
                if (test::view_partition(view, database.name).size() != 3) return false;
            }
        }
        return true;
    };
    const auto started = Clock::now();
    REQUIRE(E2eCluster::await(settled, 15s));
    WARN("three databases on two servers: shards partitioned over 3 nodes in every database "
         << seconds_since(started) << " s after every node was ready");
    for (const auto& database : cluster.databases()) {
        INFO("database " << database.name);
        const auto cover = test::lease_cover(database.url);
        CHECK(cover.uncovered == 0);
        for (const auto& [node, shards] : cover.shards) CHECK(shards.size() >= 340);
    }
}
