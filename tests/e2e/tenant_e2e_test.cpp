// Tenant controls (README, "Tenant controls") through real outboxd and outboxd-worker processes and
// the HTTP API: a namespace quota, pinned placement, pause/resume, cancel and dead-letter requeue.

#include <algorithm>
#include <fstream>
#include <thread>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "api_call.hpp"
#include "e2e_cluster.hpp"

using namespace outboxd;
using namespace std::chrono_literals;
using nlohmann::json;
using test::call_json;
using test::E2eCluster;
using test::http_call;
using test::received;

namespace {

// The worker's --stats-file, or an empty object before its first write.
json stats(const std::string& path) {
    std::ifstream in{path};
    const auto parsed = json::parse(in, nullptr, false);
    return parsed.is_object() ? parsed : json::object();
}

// Configures a namespace, then reads it back. The node's namespace cache refreshes on the
// same database lane as the API, queued by the PUT: once the GET has answered, the new
// settings are in effect on this node.
void configure(std::uint16_t port, const std::string& ns, const std::string& body) {
    call_json(port, "PUT", "/v1/namespaces/" + ns, body);
    call_json(port, "GET", "/v1/namespaces/" + ns);
}

bool workers_connected(std::uint16_t port, int count) {
    return http_call(port, "GET", "/metrics")
               .body.find("outboxd_workers_connected " + std::to_string(count) + "\n") !=
           std::string::npos;
}

}  // namespace

TEST_CASE("a namespace quota caps the rows claimed at once, however much the worker takes",
          "[e2e][tenant]") {
    E2eCluster cluster{"tenant-quota"};
    auto& node = cluster.start_node("node-1");
    configure(node.port, "t", R"({"max_in_flight":2})");
    CHECK(call_json(node.port, "GET", "/v1/namespaces/t")["max_in_flight"] == 2);
    cluster.start_worker(
        "w1", {node.worker_url()},
        {"--namespaces", "t", "--activity-types", "sleep", "--max-in-flight", "16"});
    REQUIRE(E2eCluster::await([&] { return workers_connected(node.port, 1); }, 30s));

    cluster.db.exec(
        "INSERT INTO outbox (workflow_id, ordinal, activity_type, namespace, input) "
        "SELECT 'q-' || g, 0, 'sleep', 't', '{\"ms\": 300}' FROM generate_series(1, 10) g");
    std::int64_t peak = 0;
    REQUIRE(E2eCluster::await(
        [&] {
            peak = std::max(peak, cluster.count("status = 'claimed' AND namespace = 't'"));
            return cluster.count("status = 'done' AND namespace = 't'") == 10;
        },
        30s));
    CHECK(peak == 2);  // the quota, not the worker's 16, is the limit; and it is reached
    CHECK(cluster.count("attempt <> 0") == 0);  // held rows wait; they are never failed
}

TEST_CASE("one busy namespace of a worker's hundred may use the worker's whole window",
          "[e2e][tenant]") {
    // A worker's credit is one pool for all its namespaces, not split a hundred ways because
    // the other 99 might have work: a round may claim the worker's whole free window for the
    // one namespace with rows (split, it claimed 2 rows a round, 1 once 100 were out).
    E2eCluster cluster{"tenant-pool"};
    auto& node = cluster.start_node("node-1");
    std::string namespaces = "ns-0";
    for (int i = 1; i < 100; ++i) namespaces += ",ns-" + std::to_string(i);
    cluster.start_worker(
        "w1", {node.worker_url()},
        {"--namespaces", namespaces, "--activity-types", "noop", "--max-in-flight", "200"});
    REQUIRE(E2eCluster::await([&] { return workers_connected(node.port, 1); }, 30s));
    const auto rounds = [&] {
        return test::metric_sample(http_call(node.port, "GET", "/metrics").body,
                                   "outboxd_claim_seconds_count")
            .value_or(0);
    };
    const auto rounds_before = rounds();

    constexpr int kRows = 4000;
    cluster.db.exec(
        "INSERT INTO outbox (workflow_id, ordinal, activity_type, namespace, input) "
        "SELECT 'busy-' || g, 0, 'noop', 'ns-7', '{}' FROM generate_series(1, " +
        std::to_string(kRows) + ") g");
    REQUIRE(E2eCluster::await([&] { return cluster.count("status = 'done'") == kRows; }, 60s));
    const auto per_round = kRows / std::max(1.0, rounds() - rounds_before);
    INFO("rows per claim round: " << per_round);
    CHECK(per_round >= 20);
}

TEST_CASE("a pinned namespace runs only on workers with the pinned label", "[e2e][tenant]") {
    E2eCluster cluster{"tenant-pinned"};
    auto& node = cluster.start_node("node-1");
    configure(node.port, "p", R"({"placement":{"mode":"pinned","nodes":["a"]}})");
    const auto log_a = cluster.dir() + "/a.received";
    const auto log_b = cluster.dir() + "/b.received";
    cluster.start_worker(
        "wa", {node.worker_url()},
        {"--node", "a", "--namespaces", "p", "--activity-types", "echo", "--received-log", log_a});
    cluster.start_worker(
        "wb", {node.worker_url()},
        {"--node", "b", "--namespaces", "p", "--activity-types", "echo", "--received-log", log_b});
    REQUIRE(E2eCluster::await([&] { return workers_connected(node.port, 2); }, 30s));

    cluster.db.exec(
        "INSERT INTO outbox (workflow_id, ordinal, activity_type, namespace) "
        "SELECT 'p-' || g, 0, 'echo', 'p' FROM generate_series(1, 10) g");
    // A row's own node wins over the namespace placement.
    cluster.db.exec(
        "INSERT INTO outbox (workflow_id, ordinal, activity_type, namespace, node) "
        "VALUES ('own-b', 0, 'echo', 'p', 'b')");
    REQUIRE(E2eCluster::await([&] { return cluster.count("status = 'done'") == 11; }, 30s));

    const auto on_a = received(log_a);
    CHECK(on_a.size() == 10);
    for (const auto& line : on_a) CHECK(line.starts_with("p-"));
    CHECK(received(log_b) == std::vector<std::string>{"own-b:0:1"});
    CHECK(cluster.count("node IS NULL") == 10);  // placement never rewrote a row
}

TEST_CASE("a paused workflow's rows stay pending until it is resumed", "[e2e][tenant]") {
    E2eCluster cluster{"tenant-pause"};
    auto& node = cluster.start_node("node-1");
    const auto log = cluster.dir() + "/w1.received";
    cluster.start_worker("w1", {node.worker_url()},
                         {"--activity-types", "echo", "--received-log", log});
    REQUIRE(E2eCluster::await([&] { return workers_connected(node.port, 1); }, 30s));

    CHECK(call_json(node.port, "POST", "/v1/workflows/wp/pause")["changed"] == true);
    call_json(node.port, "POST", "/v1/outbox",
              R"({"rows":[{"workflow_id":"wp","ordinal":0,"activity_type":"echo"},
                          {"workflow_id":"wp","ordinal":1,"activity_type":"echo"},
                          {"workflow_id":"other","ordinal":0,"activity_type":"echo"}]})");
    // The unpaused row shows the worker is live; then nothing happens to the held ones.
    REQUIRE(E2eCluster::await([&] { return cluster.count("status = 'done'") == 1; }, 30s));
    // Three claim rounds later (the poll's probes look at every route), still held.
    REQUIRE(E2eCluster::await_growth(node, "outboxd_claim_seconds_count", 3, 10s));
    CHECK(cluster.count("workflow_id = 'wp' AND status = 'pending'") == 2);
    CHECK(received(log) == std::vector<std::string>{"other:0:1"});

    CHECK(call_json(node.port, "POST", "/v1/workflows/wp/resume")["changed"] == true);
    REQUIRE(E2eCluster::await([&] { return cluster.count("status = 'done'") == 3; }, 30s));
    CHECK(cluster.count("attempt <> 0") == 0);
}

TEST_CASE("cancel returns the settled keys and a dead letter is requeued to done",
          "[e2e][tenant]") {
    E2eCluster cluster{"tenant-cancel"};
    auto& node = cluster.start_node("node-1", {{"OUTBOXD_MAX_ATTEMPTS", "1"}});
    const auto stats_file = cluster.dir() + "/w1.stats";
    cluster.start_worker("w1", {node.worker_url()},
                         {"--activity-types", "sleep,fail-sometimes", "--stats-file", stats_file});
    REQUIRE(E2eCluster::await([&] { return workers_connected(node.port, 1); }, 30s));

    SECTION("cancel") {
        // wc:0 runs for a while; wc:1 has no worker that can run it and waits.
        call_json(node.port, "POST", "/v1/outbox",
                  R"({"rows":[{"workflow_id":"wc","ordinal":0,"activity_type":"sleep",
                               "input":{"ms":1500}},
                              {"workflow_id":"wc","ordinal":1,"activity_type":"nobody"}]})");
        REQUIRE(E2eCluster::await([&] { return cluster.count("status = 'claimed'") == 1; }, 30s));
        const auto body = call_json(node.port, "POST", "/v1/workflows/wc/cancel");
        auto keys = body["cancelled"].get<std::vector<std::string>>();
        std::sort(keys.begin(), keys.end());
        CHECK(keys == std::vector<std::string>{"wc:0", "wc:1"});
        CHECK(cluster.count("status = 'cancelled'") == 2);

        // The running task is told to stop (a cancel frame), stops and answers: the answer
        // changes nothing, the row stays cancelled.
        REQUIRE(
            E2eCluster::await([&] { return stats(stats_file).value("cancelled", 0) == 1; }, 30s));
        REQUIRE(E2eCluster::await([&] { return stats(stats_file).value("failed", 0) == 1; }, 30s));
        CHECK(cluster.count("status = 'cancelled'") == 2);
        CHECK(call_json(node.port, "GET", "/v1/outbox/wc:0")["status"] == "cancelled");
        CHECK(call_json(node.port, "POST", "/v1/workflows/wc/cancel")["cancelled"].empty());
    }

    SECTION("dead letter requeue") {
        call_json(node.port, "POST", "/v1/outbox",
                  R"({"rows":[{"workflow_id":"wd","ordinal":0,"activity_type":"fail-sometimes",
                               "input":{"p":1.0}}]})");
        REQUIRE(E2eCluster::await([&] { return cluster.count("status = 'failed'") == 1; }, 30s));
        const auto letters = call_json(node.port, "GET", "/v1/dead-letters?limit=10");
        REQUIRE(letters["dead_letters"].size() == 1);
        CHECK(letters["dead_letters"][0]["dispatch_key"] == "wd:0");

        cluster.db.exec("UPDATE outbox SET input = '{\"p\": 0.0}' WHERE dispatch_key = 'wd:0'");
        CHECK(call_json(node.port, "POST", "/v1/dead-letters/wd:0/requeue")["requeued"] == true);
        REQUIRE(E2eCluster::await([&] { return cluster.count("status = 'done'") == 1; }, 30s));
        CHECK(call_json(node.port, "GET", "/v1/dead-letters")["dead_letters"].empty());
    }
}
