// PostgreSQL failover (README, "Operating with HA PostgreSQL"), with real processes: a primary
// and its synchronous streaming standby of the test's own, nodes given both hosts with
// target_session_attrs=read-write, example workers draining, and a switchover mid-run.

#include <csignal>
#include <map>
#include <set>
#include <string>
#include <thread>

#include <catch2/catch.hpp>
#include <pqxx/pqxx>

#include "e2e_cluster.hpp"
#include "multi_database.hpp"
#include "outboxd/store/migrator.hpp"
#include "pg_instance.hpp"

using namespace outboxd;
using namespace std::chrono_literals;
using test::E2eCluster;
using test::MultiDatabaseCluster;

namespace {

using Clock = std::chrono::steady_clock;

constexpr int kLeaseTtlMs = 2000;
constexpr const char* kDatabase = "failover";

// Runs `sql` outside a transaction block (CREATE DATABASE, ALTER SYSTEM refuse one).
void exec_alone(const std::string& url, const std::string& sql) {
    pqxx::connection conn{url};
    pqxx::nontransaction tx{conn};
    tx.exec(sql);
}

double seconds_since(Clock::time_point from) {
    return std::chrono::duration<double>(Clock::now() - from).count();
}

// A primary with a synchronous standby: a commit the primary acknowledged is on the standby
// too, so a promotion loses nothing acknowledged.
struct ReplicatedServers {
    explicit ReplicatedServers(const std::string& name)
        : primary(test::scratch_dir(name + "-primary"), {"synchronous_commit=on"}) {
        exec_alone(primary.url(), std::string{"CREATE DATABASE "} + kDatabase);
        store::migrate(primary.url(kDatabase));
        standby = test::PgInstance::standby_of(primary, test::scratch_dir(name + "-standby"));
        exec_alone(primary.url(), "ALTER SYSTEM SET synchronous_standby_names = '*'");
        test::exec_on(primary.url(), "SELECT pg_reload_conf()");
        const bool synchronous = E2eCluster::await(
            [&] {
                return test::exec_on(primary.url(),
                                     "SELECT count(*) FROM pg_stat_replication"
                                     " WHERE sync_state = 'sync'")[0][0]
                           .as<int>() == 1;
            },
            30s);
        if (!synchronous) throw std::runtime_error{"the standby did not become synchronous"};
    }

    // Both servers, the writable one wherever it is: what the nodes are given.
    [[nodiscard]] std::string multi_host_url() const {
        return "host=127.0.0.1,127.0.0.1 port=" + std::to_string(primary.port()) + "," +
               std::to_string(standby->port()) + " dbname=" + kDatabase +
               " user=postgres target_session_attrs=read-write";
    }

    test::PgInstance primary;
    std::unique_ptr<test::PgInstance> standby;
};

}  // namespace

TEST_CASE(
    "a primary turned read-only and its promoted standby: the nodes follow without a restart, "
    "20000 rows done, none lost, only rows in flight delivered twice",
    "[e2e][failover]") {
    constexpr int kRows = 20000;
    ReplicatedServers servers{"fo-readonly"};
    const auto url = servers.multi_host_url();
    MultiDatabaseCluster cluster{"fo-readonly", {{"default", url}}};
    const std::map<std::string, std::string> env{
        {"OUTBOXD_LEASE_TTL_MS", std::to_string(kLeaseTtlMs)}, {"OUTBOXD_POLL_INTERVAL_MS", "200"}};
    auto& first = cluster.launch_node("node-1", env);
    cluster.launch_node("node-2", env);
    cluster.launch_node("node-3", env);
    for (auto& node : cluster.nodes) cluster.await_ready(node);
    REQUIRE(E2eCluster::await([&] { return test::leases_balanced(cluster, 3); }, 15s));
    // 2 workers × 64 tasks of 20 ms: some 6,000 rows/s at most, a few seconds of draining.
    const auto logs = test::start_sleep_workers(cluster, first, 2, 64);
    REQUIRE(E2eCluster::await([&] { return test::workers_everywhere(cluster, 2); }, 15s));
    test::stage_sleep_rows(url, "fo", kRows, 20);
    REQUIRE(E2eCluster::await([&] { return test::done_in(url) >= kRows / 4; }, 60s));

    // The switchover: the primary stops taking writes (its sessions stay: every write on them
    // now fails with 25006), what it acknowledged is on the standby, which is promoted.
    exec_alone(servers.primary.url(), "ALTER SYSTEM SET default_transaction_read_only = on");
    test::exec_on(servers.primary.url(), "SELECT pg_reload_conf()");
    const auto switched = Clock::now();
    // Rows out on workers at the switchover: the only ones that may be delivered twice.
    std::set<std::string> in_flight;
    for (const auto& row :
         test::exec_on(servers.primary.url(kDatabase),
                       "SELECT dispatch_key FROM outbox WHERE status = 'claimed'")) {
        in_flight.insert(row[0].as<std::string>());
    }
    const auto done_before = test::done_in(servers.primary.url(kDatabase));
    servers.standby->promote();
    const auto promoted_after = seconds_since(switched);

    const auto new_primary = servers.standby->url(kDatabase);
    std::optional<double> first_done_after;
    REQUIRE(E2eCluster::await(
        [&] {
            const auto done = test::done_in(new_primary);
            if (!first_done_after && done > done_before) first_done_after = seconds_since(switched);
            return done == kRows;
        },
        120s));
    const auto drained_after = seconds_since(switched);
    CHECK(test::count_rows(new_primary, "status <> 'done'") == 0);
    CHECK(test::count_rows(new_primary, "true") == kRows);  // none lost on the way

    const auto delivered = test::deliveries(logs);
    CHECK(delivered.size() == static_cast<std::size_t>(kRows));
    int duplicates = 0;
    for (const auto& [key, count] : delivered) {
        if (count > 1) {
            ++duplicates;
            INFO("delivered " << count << " times: " << key);
            CHECK(in_flight.contains(key));
        }
    }
    // Every node followed: no restart, each one ready and serving the new primary.
    for (const auto& node : cluster.nodes) {
        INFO(node.name);
        CHECK(node.process->running());
        CHECK(test::readiness(node).status == 200);
    }
    CHECK(test::exec_on(new_primary, "SELECT count(*) FROM live_shard_leases")[0][0].as<int>() ==
          1024);
    WARN("read-only primary + promotion: " << in_flight.size() << " rows in flight at the switch, "
                                           << duplicates << " delivered twice; promoted after "
                                           << promoted_after << " s, first row done on the new "
                                           << "primary after " << first_done_after.value_or(-1)
                                           << " s, all done after " << drained_after << " s");
}

TEST_CASE(
    "a database outage of three lease TTLs with 3,000 tasks out: every node keeps its shards "
    "and its tasks, none is delivered twice",
    "[e2e][failover]") {
    constexpr int kRows = 3000;
    // Every task still running when the database returns: the tasks reach the workers over
    // several seconds (each worker's credit moves to the nodes that have work), then the
    // outage lasts 6 s.
    constexpr int kSleepMs = 40000;
    test::PgInstance server{test::scratch_dir("fo-outage-pg")};
    exec_alone(server.url(), std::string{"CREATE DATABASE "} + kDatabase);
    const auto url = server.url(kDatabase);
    store::migrate(url);
    MultiDatabaseCluster cluster{"fo-outage", {{"default", url}}};
    const std::map<std::string, std::string> env{
        {"OUTBOXD_LEASE_TTL_MS", std::to_string(kLeaseTtlMs)},
        {"OUTBOXD_POLL_INTERVAL_MS", "200"},
        {"OUTBOXD_TASK_TIMEOUT_MS", "120000"}};
    auto& first = cluster.launch_node("node-1", env);
    cluster.launch_node("node-2", env);
    cluster.launch_node("node-3", env);
    for (auto& node : cluster.nodes) cluster.await_ready(node);
    REQUIRE(E2eCluster::await([&] { return test::leases_balanced(cluster, 3); }, 15s));
    // Credit to spare: a share of each worker's window stays with the nodes it is split over.
    const auto logs = test::start_sleep_workers(cluster, first, 3, 1200);
    REQUIRE(E2eCluster::await([&] { return test::workers_everywhere(cluster, 3); }, 15s));
    test::stage_sleep_rows(url, "outage", kRows, kSleepMs);
    // Every task out on a worker, on every node.
    REQUIRE(E2eCluster::await(
        [&] {
            return test::deliveries(logs).size() == kRows &&
                   test::count_rows(url, "status = 'claimed'") == kRows;
        },
        30s));
    std::map<std::string, std::int64_t> held_by;
    for (const auto& row :
         test::exec_on(url,
                       "SELECT split_part(claimed_by, '/', 1), count(*) FROM outbox"
                       " WHERE status = 'claimed' GROUP BY 1")) {
        held_by[row[0].as<std::string>()] = row[1].as<std::int64_t>();
    }
    CHECK(held_by.size() == 3);

    server.stop();
    std::this_thread::sleep_for(std::chrono::milliseconds{3 * kLeaseTtlMs});
    server.start();

    REQUIRE(E2eCluster::await([&] { return test::done_in(url) == kRows; }, 90s));
    const auto delivered = test::deliveries(logs);
    CHECK(delivered.size() == static_cast<std::size_t>(kRows));
    int duplicates = 0;
    for (const auto& [key, count] : delivered) {
        if (count > 1) ++duplicates;
    }
    CHECK(duplicates == 0);
    // The same three nodes own the shards, each its own range again.
    CHECK(test::lease_cover(url).balanced(3));
    for (const auto& node : cluster.nodes) {
        INFO(node.name);
        CHECK(node.process->running());
        CHECK(node.process->log().find("settling=true") != std::string::npos);
    }
    WARN("outage of " << 3 * kLeaseTtlMs << " ms with " << kRows << " tasks out ("
                      << held_by["node-1"] << " / " << held_by["node-2"] << " / "
                      << held_by["node-3"] << " per node): " << duplicates << " delivered twice");
}

TEST_CASE(
    "with OUTBOXD_MIGRATE=false a node is unready on a schema missing a migration, and ready "
    "once someone migrates",
    "[e2e][failover]") {
    E2eCluster cluster{"schema-behind", /*migrated=*/false};
    const auto all = store::bundled_migrations();
    (void)store::migrate(cluster.db.url(), all.first(all.size() - 1));
    auto& node = cluster.launch_node("node-1", {{"OUTBOXD_MIGRATE", "false"}});
    // It does not serve the database.
    const auto status_of = [&](const std::string& path) {
        try {
            return test::http_call(node.port, "GET", path).status;
        } catch (const std::exception&) {
            return 0;  // not listening yet
        }
    };
    // It listens (its port is known once it says so) and answers health.
    cluster.await_ready(node, [&](std::uint16_t) { return status_of("/healthz") == 200; });
    REQUIRE(E2eCluster::await(
        [&] { return node.process->log().find("event=schema_behind") != std::string::npos; }, 30s));
    CHECK(status_of("/readyz") == 503);
    CHECK(
        test::exec_on(cluster.db.url(), "SELECT count(*) FROM dispatcher_nodes")[0][0].as<int>() ==
        0);

    (void)store::migrate(cluster.db.url());  // the operator's `outboxd migrate`
    CHECK(E2eCluster::await([&] { return status_of("/readyz") == 200; }, 60s));
}
