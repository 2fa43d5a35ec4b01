// Prometheus metrics: every contract name, gauges that agree with the database, and a real
// Prometheus server scraping a two-node cluster.

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "e2e_cluster.hpp"

using namespace outboxd;
using namespace std::chrono_literals;
using nlohmann::json;
using test::E2eCluster;

namespace {

std::string metrics_of(const test::NodeHandle& node) {
    return test::http_call(node.port, "GET", "/metrics").body;
}

void stage_paused_and_live(E2eCluster& cluster) {
    // 'held' rows stay pending (paused); 'busy' rows are claimed by a slow worker.
    cluster.db.exec(
        "INSERT INTO paused_workflows (workflow_id) SELECT 'held-' || g FROM generate_series(1, 7) "
        "g");
    cluster.db.exec(
        "INSERT INTO outbox (workflow_id, ordinal, activity_type, namespace) "
        "SELECT 'held-' || g, 0, 'sleep', 'alpha' FROM generate_series(1, 7) g");
    cluster.db.exec(
        "INSERT INTO outbox (workflow_id, ordinal, activity_type, namespace, input) "
        "SELECT 'busy-' || g, 0, 'sleep', 'beta', '{\"ms\": 60000}' FROM generate_series(1, 3) g");
    cluster.db.exec(
        "INSERT INTO outbox (workflow_id, ordinal, activity_type, namespace, input) "
        "SELECT 'quick-' || g, 0, 'sleep', 'alpha', '{\"ms\": 1}' FROM generate_series(1, 20) g");
}

}  // namespace

TEST_CASE("/metrics carries every contract name and its gauges agree with the database",
          "[e2e][metrics]") {
    E2eCluster cluster{"metrics"};
    auto& node = cluster.start_node("node-1");
    cluster.start_worker(
        "w1", {node.worker_url()},
        {"--activity-types", "sleep", "--namespaces", "alpha,beta", "--max-in-flight", "8"});
    stage_paused_and_live(cluster);
    REQUIRE(E2eCluster::await(
        [&] {
            return cluster.count("status = 'done'") == 20 &&
                   cluster.count("status = 'claimed'") == 3;
        },
        30s));

    // Gauges are refreshed from one grouped query every second.
    REQUIRE(E2eCluster::await(
        [&] {
            const auto text = metrics_of(node);
            return test::metric_sample(
                       text, R"(outboxd_outbox_inflight_rows{namespace="alpha"})") == 7.0 &&
                   test::metric_sample(text, R"(outboxd_outbox_claimed_rows{namespace="beta"})") ==
                       3.0;
        },
        10s));
    const auto text = metrics_of(node);
    for (const char* name :
         {"outboxd_outbox_inflight_rows", "outboxd_outbox_claimed_rows",
          "outboxd_tasks_outstanding", "outboxd_rows_claimed_total", "outboxd_outcomes_total",
          "outboxd_dispatch_latency_seconds", "outboxd_claim_seconds", "outboxd_owned_shards",
          "outboxd_cluster_nodes_live", "outboxd_workers_connected"}) {
        INFO(name);
        CHECK(text.find(std::string{"\n"} + name) != std::string::npos);
    }
    const auto db_count = [&](const std::string& where) {
        return static_cast<double>(cluster.count(where));
    };
    CHECK(test::metric_sample(text, R"(outboxd_outbox_inflight_rows{namespace="alpha"})") ==
          db_count("namespace = 'alpha' AND status IN ('pending', 'claimed')"));
    CHECK(test::metric_sample(text, R"(outboxd_outbox_inflight_rows{namespace="beta"})") ==
          db_count("namespace = 'beta' AND status IN ('pending', 'claimed')"));
    CHECK(test::metric_sample(text, R"(outboxd_outbox_claimed_rows{namespace="alpha"})") ==
          db_count("namespace = 'alpha' AND status = 'claimed'"));
    CHECK(test::metric_sample(text, R"(outboxd_tasks_outstanding{namespace="beta"})") == 3.0);
    CHECK(test::metric_sample(text, R"(outboxd_rows_claimed_total{namespace="alpha"})") == 20.0);
    CHECK(test::metric_sample(
              text, R"(outboxd_outcomes_total{namespace="alpha",outcome="done"})") == 20.0);
    CHECK(test::metric_sample(text, "outboxd_owned_shards") == 1024.0);
    CHECK(test::metric_sample(text, "outboxd_cluster_nodes_live") == 1.0);
    CHECK(test::metric_sample(text, "outboxd_workers_connected") == 1.0);
    CHECK(test::metric_sample(text, "outboxd_dispatch_latency_seconds_count") == 23.0);
    CHECK(test::metric_sample(text, "outboxd_claim_seconds_count").value_or(0) >= 1.0);
}

TEST_CASE("a real Prometheus scrapes a two-node cluster and serves its series",
          "[e2e][metrics][prometheus]") {
    namespace fs = std::filesystem;
    std::string binary;
    for (const char* candidate : {"/usr/bin/prometheus", "/usr/local/bin/prometheus"}) {
        if (fs::exists(candidate)) binary = candidate;
    }
    REQUIRE_FALSE(binary.empty());  // scripts/install-deps installs the Debian package

    E2eCluster cluster{"prometheus"};
    auto& first = cluster.start_node("node-1", {{"OUTBOXD_LEASE_TTL_MS", "1000"}});
    auto& second = cluster.start_node("node-2", {{"OUTBOXD_LEASE_TTL_MS", "1000"}});
    cluster.start_worker(
        "w1", {first.worker_url()},
        {"--activity-types", "sleep", "--namespaces", "alpha,beta", "--max-in-flight", "8"});
    stage_paused_and_live(cluster);
    REQUIRE(E2eCluster::await(
        [&] {
            return cluster.count("status = 'done'") == 20 &&
                   cluster.count("status = 'claimed'") == 3;
        },
        30s));

    const auto dir = cluster.dir();
    {
        std::ofstream config{dir + "/prometheus.yml"};
        config << "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
               << "scrape_configs:\n  - job_name: outboxd\n    static_configs:\n"
               << "      - targets: ['127.0.0.1:" << first.port << "', '127.0.0.1:" << second.port
               << "']\n";
    }
    std::uint16_t port = 0;
    std::unique_ptr<test::Process> prometheus;
    for (std::uint16_t candidate = static_cast<std::uint16_t>(19190 + ::getpid() % 500);;
         ++candidate) {
        prometheus = std::make_unique<test::Process>(
            std::vector<std::string>{binary, "--config.file=" + dir + "/prometheus.yml",
                                     "--storage.tsdb.path=" + dir + "/prometheus-data",
                                     "--web.listen-address=127.0.0.1:" + std::to_string(candidate)},
            std::map<std::string, std::string>{}, dir + "/prometheus.log");
        if (E2eCluster::await(
                [&] {
                    try {
                        return test::http_call(candidate, "GET", "/-/ready").status == 200;
                    } catch (const std::exception&) {
                        return false;
                    }
                },
                20s)) {
            port = candidate;
            break;
        }
        REQUIRE(candidate < 19190 + ::getpid() % 500 + 5);
    }

    const auto query = [&](const std::string& promql) {
        std::string encoded;
        for (const unsigned char c : promql) {
            if (std::isalnum(c) || c == '_') {
                encoded += static_cast<char>(c);
            } else {
                char hex[4];
                std::snprintf(hex, sizeof hex, "%%%02X", c);
                encoded += hex;
            }
        }
        return json::parse(test::http_call(port, "GET", "/api/v1/query?query=" + encoded).body);
    };
    const auto scalar = [&](const std::string& promql) -> std::optional<double> {
        const auto answer = query(promql);
        if (answer["status"] != "success" || answer["data"]["result"].empty()) return std::nullopt;
        return std::stod(answer["data"]["result"][0]["value"][1].get<std::string>());
    };

    // Both nodes are scraped, the shards sum to 1024, and the durable gauges summed over the
    // nodes equal the database's totals.
    REQUIRE(
        E2eCluster::await([&] { return scalar("count(up{job=\"outboxd\"} == 1)") == 2.0; }, 30s));
    REQUIRE(E2eCluster::await([&] { return scalar("sum(outboxd_owned_shards)") == 1024.0; }, 30s));
    const double live = static_cast<double>(cluster.count("status IN ('pending', 'claimed')"));
    REQUIRE(E2eCluster::await([&] { return scalar("sum(outboxd_outbox_inflight_rows)") == live; },
                              30s));
    CHECK(scalar("sum(outboxd_outbox_claimed_rows)") == 3.0);
    CHECK(scalar("sum(outboxd_outbox_inflight_rows{namespace=\"alpha\"})") == 7.0);
    CHECK(scalar("sum(outboxd_outcomes_total{outcome=\"done\"})") == 20.0);
    CHECK(scalar("max(outboxd_cluster_nodes_live)") == 2.0);
    const auto series = query("outboxd_owned_shards");
    CHECK(series["data"]["result"].size() == 2);
}
