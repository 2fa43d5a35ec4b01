// outboxd and outboxd-worker as real processes against a real PostgreSQL.

#include <csignal>
#include <fstream>
#include <set>
#include <sstream>
#include <string_view>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <pqxx/pqxx>

#include "e2e_cluster.hpp"

using namespace outboxd;
using namespace std::chrono_literals;
using test::E2eCluster;
using test::received;

TEST_CASE("rows staged by plain SQL in an application transaction reach a worker and end done",
          "[e2e]") {
    E2eCluster cluster{"sql-staged"};
    auto& node = cluster.start_node("node-1");
    const auto log = cluster.dir() + "/w1.received";
    cluster.start_worker("w1", {node.worker_url()},
                         {"--activity-types", "echo", "--received-log", log});
    {
        auto conn = cluster.db.connect();
        pqxx::work app{conn};
        app.exec("CREATE TABLE orders (id int PRIMARY KEY, total numeric)");
        for (int i = 0; i < 20; ++i) {
            app.exec("INSERT INTO orders VALUES (" + std::to_string(i) + ", 9.99)");
            app.exec(
                "INSERT INTO outbox (workflow_id, ordinal, activity_type, input) VALUES ('order-" +
                std::to_string(i) + "', 0, 'echo', '{\"order\": " + std::to_string(i) + "}')");
        }
        app.commit();
    }
    REQUIRE(E2eCluster::await([&] { return cluster.count("status = 'done'") == 20; }, 30s));
    CHECK(received(log).size() == 20);
    CHECK(cluster.count("attempt <> 0") == 0);
}

TEST_CASE("a worker killed mid-task: its rows go to another worker and end done", "[e2e]") {
    E2eCluster cluster{"worker-killed"};
    auto& node = cluster.start_node("node-1");
    auto& doomed = cluster.start_worker("doomed", {node.worker_url()},
                                        {"--activity-types", "sleep", "--max-in-flight", "4",
                                         "--received-log", cluster.dir() + "/doomed.received"});
    cluster.db.exec(
        "INSERT INTO outbox (workflow_id, ordinal, activity_type, input) "
        "SELECT 'wf-' || g, 0, 'sleep', '{\"ms\": 60000}' FROM generate_series(1, 4) g");
    REQUIRE(E2eCluster::await([&] { return cluster.count("status = 'claimed'") == 4; }, 30s));
    REQUIRE(E2eCluster::await(
        [&] { return received(cluster.dir() + "/doomed.received").size() == 4; }, 10s));
    doomed.signal(SIGKILL);
    REQUIRE(doomed.wait(10s));

    const auto log = cluster.dir() + "/rescuer.received";
    // The rescuer finishes fast. The node writes the lost worker's retries meanwhile, to the
    // same rows in its own order: a deadlock ends one of the two, and this one tries again.
    for (int attempt = 1;; ++attempt) {
        try {
            cluster.db.exec("UPDATE outbox SET input = '{\"ms\": 10}'");
            break;
        } catch (const pqxx::sql_error& error) {
            if (attempt == 5 ||
                std::string_view{error.what()}.find("deadlock") == std::string_view::npos) {
                throw;
            }
        }
    }
    cluster.start_worker("rescuer", {node.worker_url()},
                         {"--activity-types", "sleep", "--received-log", log});
    REQUIRE(E2eCluster::await([&] { return cluster.count("status = 'done'") == 4; }, 30s));
    // Each row was re-dispatched once, as its second attempt.
    const auto lines = received(log);
    CHECK(lines.size() == 4);
    for (const auto& line : lines) CHECK(line.ends_with(":2"));
    CHECK(cluster.count("attempt = 1") == 4);
    CHECK(cluster.count("deliveries = 2") == 4);  // the lost one and the rescuer's
}

TEST_CASE("ten thousand rows flow through outboxd and outboxd-worker processes to done", "[e2e]") {
    E2eCluster cluster{"ten-thousand"};
    auto& node = cluster.start_node("node-1", {{"OUTBOXD_BATCH_SIZE", "512"}});
    cluster.start_worker("w1", {node.worker_url()},
                         {"--activity-types", "noop", "--max-in-flight", "256"});
    cluster.start_worker("w2", {node.worker_url()},
                         {"--activity-types", "noop", "--max-in-flight", "256"});
    const auto started = std::chrono::steady_clock::now();
    for (int batch = 0; batch < 10; ++batch) {
        nlohmann::json rows = nlohmann::json::array();
        for (int i = 0; i < 1000; ++i) {
            rows.push_back({{"workflow_id", "wf-" + std::to_string(batch * 1000 + i)},
                            {"ordinal", 0},
                            {"activity_type", "noop"},
                            {"input", {{"n", i}}}});
        }
        const auto result =
            test::http_call(node.port, "POST", "/v1/outbox", nlohmann::json{{"rows", rows}}.dump());
        REQUIRE(result.status == 200);
        CHECK(nlohmann::json::parse(result.body)["staged"] == 1000);
    }
    REQUIRE(E2eCluster::await([&] { return cluster.count("status = 'done'") == 10000; }, 120s));
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    WARN("10000 rows staged over HTTP and dispatched to done in " << seconds << " s ("
                                                                  << 10000 / seconds << " rows/s)");
    CHECK(cluster.count("status <> 'done'") == 0);
    CHECK(cluster.count("attempt <> 0") == 0);
}

TEST_CASE("SIGTERM drains: in-flight tasks are answered, leases released, exit 0", "[e2e]") {
    E2eCluster cluster{"drain"};
    auto& node = cluster.start_node("node-1");
    cluster.start_worker("w1", {node.worker_url()},
                         {"--activity-types", "sleep", "--max-in-flight", "3"});
    cluster.db.exec(
        "INSERT INTO outbox (workflow_id, ordinal, activity_type, input) "
        "SELECT 'wf-' || g, 0, 'sleep', '{\"ms\": 1500}' FROM generate_series(1, 3) g");
    REQUIRE(E2eCluster::await([&] { return cluster.count("status = 'claimed'") == 3; }, 30s));
    cluster.db.exec(
        "INSERT INTO outbox (workflow_id, ordinal, activity_type, input) "
        "SELECT 'later-' || g, 0, 'sleep', '{\"ms\": 10}' FROM generate_series(1, 5) g");
    node.process->signal(SIGTERM);
    const auto code = node.process->wait(30s);
    REQUIRE(code);
    CHECK(*code == 0);
    CHECK(cluster.count("status = 'done'") == 3);     // the in-flight ones were answered
    CHECK(cluster.count("status = 'claimed'") == 0);  // nothing left dangling
    CHECK(cluster.count("status = 'pending'") == 5);  // nothing new was claimed while draining
    CHECK(cluster.db.exec("SELECT count(*) FROM dispatcher_nodes")[0][0].as<int>() == 0);
    CHECK(cluster.db.exec("SELECT count(*) FROM shard_leases WHERE owner IS NOT NULL")[0][0]
              .as<int>() == 0);
    CHECK(node.process->log().find("event=drained") != std::string::npos);
}
