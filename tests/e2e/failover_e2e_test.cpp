// PostgreSQL failover (README, "Operating with HA PostgreSQL"), with real processes: a primary
// and its synchronous streaming standby of the test's own, nodes given both hosts with
// target_session_attrs=read-write (or PgBouncer in front), example workers draining, and a
// switchover mid-run; a database outage; PgBouncer in session mode, restarted, and in
// transaction mode, refused.

#include <csignal>
#include <functional>
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
#include "pgbouncer.hpp"

using namespace outboxd;
using namespace std::chrono_literals;
using test::E2eCluster;
using test::MultiDatabaseCluster;

namespace {

using Clock = std::chrono::steady_clock;

constexpr int kLeaseTtlMs = 2000;
constexpr const char* kDatabase = "failover";
// How long after its claim a row may reach its worker on a loaded machine (a claim round's
// rows are pushed in the same turn of the node's loop).
constexpr std::int64_t kPushMargin = 1000;

// Runs `sql` outside a transaction block (CREATE DATABASE, ALTER SYSTEM refuse one).
void exec_alone(const std::string& url, const std::string& sql) {
    pqxx::connection conn{url};
    pqxx::nontransaction tx{conn};
    tx.exec(sql);
}

std::int64_t unix_ms() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
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

// Rows out on workers now: the only ones a fault may deliver twice.
std::set<std::string> claimed_keys(const std::string& url) {
    std::set<std::string> keys;
    for (const auto& row :
         test::exec_on(url, "SELECT dispatch_key FROM outbox WHERE status = 'claimed'")) {
        keys.insert(row[0].as<std::string>());
    }
    return keys;
}

// After a fault, with every row done: each of the `rows` rows was delivered, those delivered
// more than once were all in flight at the fault (`in_flight`), and every node runs on, ready
// (no restart). Returns how many were delivered more than once.
int duplicates_after_fault(const MultiDatabaseCluster& cluster,
                           const std::vector<std::string>& logs, int rows,
                           const std::function<bool(const std::string&)>& in_flight) {
    const auto delivered = test::deliveries(logs);
    CHECK(delivered.size() == static_cast<std::size_t>(rows));
    int duplicates = 0;
    for (const auto& [key, count] : delivered) {
        if (count > 1) {
            ++duplicates;
            INFO("delivered " << count << " times: " << key);
            CHECK(in_flight(key));
        }
    }
    for (const auto& node : cluster.nodes) {
        INFO(node.name);
        CHECK(node.process->running());
        CHECK(test::readiness(node).status == 200);
    }
    return duplicates;
}

// Waits (REQUIRE) until `rows` rows are done at `url`; returns the seconds from `from` until
// the first row beyond `done_before` was done there.
double first_done_then_drained(const std::string& url, std::int64_t done_before, int rows,
                               Clock::time_point from) {
    std::optional<double> first_done_after;
    REQUIRE(E2eCluster::await(
        [&] {
            const auto done = test::done_in(url);
            if (!first_done_after && done > done_before) first_done_after = seconds_since(from);
            return done == rows;
        },
        120s));
    CHECK(test::count_rows(url, "true") == rows);  // none lost on the way
    return first_done_after.value_or(-1);
}

// `nodes` nodes serving `url` (node-1 …, leases balanced), two sleep workers of 64 tasks at
// once connected to every node, `rows` rows of `sleep_ms` staged under `prefix` and a quarter
// of them done: a drain under way. Returns the workers' received logs.
std::vector<std::string> drain_under_way(MultiDatabaseCluster& cluster, const std::string& url,
                                         int nodes, const std::string& prefix, int rows,
                                         int sleep_ms) {
    const std::map<std::string, std::string> env{
        {"OUTBOXD_LEASE_TTL_MS", std::to_string(kLeaseTtlMs)}, {"OUTBOXD_POLL_INTERVAL_MS", "200"}};
    for (int i = 1; i <= nodes; ++i) cluster.launch_node("node-" + std::to_string(i), env);
    for (auto& node : cluster.nodes) cluster.await_ready(node);
    REQUIRE(E2eCluster::await(
        [&] { return test::leases_balanced(cluster, static_cast<std::size_t>(nodes)); }, 15s));
    auto logs = test::start_sleep_workers(cluster, cluster.nodes.front(), 2, 64);
    REQUIRE(E2eCluster::await([&] { return test::workers_everywhere(cluster, 2); }, 15s));
    test::stage_sleep_rows(url, prefix, rows, sleep_ms);
    REQUIRE(E2eCluster::await([&] { return test::done_in(url) >= rows / 4; }, 60s));
    return logs;
}

}  // namespace

TEST_CASE(
    "a primary turned read-only and its promoted standby: the nodes follow without a restart, "
    "20000 rows done, none lost, only rows in flight delivered twice",
    "[e2e][failover]") {
    constexpr int kRows = 20000;
    ReplicatedServers servers{"fo-readonly"};
    const auto url = servers.multi_host_url();
    MultiDatabaseCluster cluster{"fo-readonly", {{"default", url}}};
    // 2 workers × 64 tasks of 20 ms: some 6,000 rows/s at most, a few seconds of draining.
    const auto logs = drain_under_way(cluster, url, 3, "fo", kRows, 20);

    // The switchover: the primary stops taking writes (its sessions stay: every write on them
    // now fails with 25006), what it acknowledged is on the standby, which is promoted.
    exec_alone(servers.primary.url(), "ALTER SYSTEM SET default_transaction_read_only = on");
    test::exec_on(servers.primary.url(), "SELECT pg_reload_conf()");
    const auto switched = Clock::now();
    // Rows out on workers at the switchover: the only ones that may be delivered twice.
    const auto in_flight = claimed_keys(servers.primary.url(kDatabase));
    const auto done_before = test::done_in(servers.primary.url(kDatabase));
    servers.standby->promote();
    const auto promoted_after = seconds_since(switched);

    const auto new_primary = servers.standby->url(kDatabase);
    const auto first_done_after =
        first_done_then_drained(new_primary, done_before, kRows, switched);
    const auto drained_after = seconds_since(switched);

    // Every node followed: no restart, each one ready and serving the new primary.
    const int duplicates = duplicates_after_fault(
        cluster, logs, kRows, [&](const std::string& key) { return in_flight.contains(key); });
    CHECK(test::exec_on(new_primary, "SELECT count(*) FROM live_shard_leases")[0][0].as<int>() ==
          1024);
    WARN("read-only primary + promotion: " << in_flight.size() << " rows in flight at the switch, "
                                           << duplicates << " delivered twice; promoted after "
                                           << promoted_after << " s, first row done on the new "
                                           << "primary after " << first_done_after
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

TEST_CASE(
    "PgBouncer in session mode, the primary stopped and its standby promoted: 20000 rows done, "
    "none lost, only rows in flight delivered twice",
    "[e2e][failover]") {
    constexpr int kRows = 20000;
    ReplicatedServers servers{"fo-bouncer"};
    test::PgBouncer bouncer{test::scratch_dir("fo-bouncer-pgbouncer"), servers.primary.port()};
    const auto url = bouncer.url(kDatabase);
    MultiDatabaseCluster cluster{"fo-bouncer", {{"default", url}}};
    const auto logs = drain_under_way(cluster, url, 3, "fob", kRows, 20);

    // The operator's switchover: the primary stops (what it acknowledged is on the standby),
    // the standby is promoted, PgBouncer is pointed at it and reloaded.
    // Claims commit without waiting for the standby: one made in the last moments before the
    // stop may be lost with the old primary, and its row claimed and delivered again. Rows in
    // flight at the stop: first received by the time the old primary was down, give or take
    // the time a claimed row takes to reach its worker (kPushMargin).
    const auto in_flight = claimed_keys(servers.primary.url(kDatabase)).size();
    const auto done_before = test::done_in(servers.primary.url(kDatabase));
    const auto stopped = Clock::now();
    servers.primary.stop();
    const auto stopped_ms = unix_ms() + kPushMargin;
    servers.standby->promote();
    bouncer.retarget(servers.standby->port());
    const auto switched_after = seconds_since(stopped);

    const auto new_primary = servers.standby->url(kDatabase);
    const auto first_done_after = first_done_then_drained(new_primary, done_before, kRows, stopped);
    const auto first = test::first_received_ms(logs);
    const int duplicates = duplicates_after_fault(
        cluster, logs, kRows,
        [&](const std::string& key) { return first.contains(key) && first.at(key) <= stopped_ms; });
    // The first row done on the new primary within twice the lease TTL of the stop.
    CHECK(first_done_after > 0);
    CHECK(first_done_after <= 2 * kLeaseTtlMs / 1000.0);
    WARN("PgBouncer, primary stopped + promotion: "
         << in_flight << " rows in flight, " << duplicates << " delivered twice; switched after "
         << switched_after << " s, first row done on "
         << "the new primary after " << first_done_after << " s");
}

TEST_CASE("PgBouncer in session mode restarted mid-run: every row done, none lost",
          "[e2e][failover]") {
    constexpr int kRows = 8000;
    E2eCluster cluster{"bouncer-restart"};
    test::PgBouncer bouncer{test::scratch_dir("bouncer-restart-pgbouncer"), E2eCluster::pg_port()};
    const auto url = cluster.url_via(bouncer.port());
    MultiDatabaseCluster nodes{"bouncer-restart", {{"default", url}}};
    const auto logs = drain_under_way(nodes, url, 2, "bre", kRows, 10);

    const auto in_flight = claimed_keys(cluster.db.url()).size();
    REQUIRE(bouncer.restart());  // every client connection cut at once
    const auto restarted_ms = unix_ms() + kPushMargin;

    REQUIRE(E2eCluster::await([&] { return test::done_in(cluster.db.url()) == kRows; }, 120s));
    CHECK(test::count_rows(cluster.db.url(), "true") == kRows);
    const auto first = test::first_received_ms(logs);
    const int duplicates = duplicates_after_fault(nodes, logs, kRows, [&](const std::string& key) {
        return first.contains(key) && first.at(key) <= restarted_ms;
    });
    WARN("PgBouncer restart: " << in_flight << " rows in flight, " << duplicates
                               << " delivered twice");
}

TEST_CASE(
    "behind PgBouncer in transaction mode a node refuses the database, naming the mode, and "
    "claims nothing",
    "[e2e][failover]") {
    E2eCluster cluster{"bouncer-txn"};
    test::PgBouncer bouncer{test::scratch_dir("bouncer-txn-pgbouncer"), E2eCluster::pg_port(),
                            "transaction"};
    const auto url = cluster.url_via(bouncer.port());
    test::stage_sleep_rows(cluster.db.url(), "txn", 10, 1);
    auto& node = cluster.launch_node("node-1", {{"OUTBOXD_DATABASE_URL", url}});
    const auto status_of = [&](const std::string& path) {
        try {
            return test::http_call(node.port, "GET", path).status;
        } catch (const std::exception&) {
            return 0;
        }
    };
    cluster.await_ready(node, [&](std::uint16_t) { return status_of("/healthz") == 200; });
    REQUIRE(node.process->await_log("event=pooler_refused", 30s));
    CHECK(node.process->log().find("pool_mode=transaction") != std::string::npos);
    CHECK(status_of("/readyz") == 503);
    CHECK(node.process->running());
    CHECK(test::count_rows(cluster.db.url(), "status = 'pending'") == 10);
    CHECK(
        test::exec_on(cluster.db.url(), "SELECT count(*) FROM dispatcher_nodes")[0][0].as<int>() ==
        0);
}
