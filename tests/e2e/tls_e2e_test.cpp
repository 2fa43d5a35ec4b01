// TLS on the listen address: HTTPS for the API and wss:// for workers, with a throwaway CA.

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "e2e_cluster.hpp"
#include "tls_files.hpp"

using namespace outboxd;
using namespace std::chrono_literals;
using test::E2eCluster;

namespace {

std::map<std::string, std::string> tls_env(const test::TlsFiles& tls) {
    return {{"OUTBOXD_TLS_CERT_FILE", tls.cert_file}, {"OUTBOXD_TLS_KEY_FILE", tls.key_file}};
}

// curl against the node over HTTPS, trusting the test CA: the body, or "" on failure.
test::CommandResult https_get(const test::TlsFiles& tls, std::uint16_t port,
                              const std::string& path, const std::string& host = "127.0.0.1") {
    return test::run_command("curl -sS --fail --max-time 5 --cacert " + tls.ca_file + " https://" +
                             host + ":" + std::to_string(port) + path);
}

void stage(E2eCluster& cluster, const std::string& prefix, int count) {
    cluster.db.exec("INSERT INTO outbox (workflow_id, ordinal, activity_type) SELECT '" + prefix +
                    "-' || g, 0, 'echo' FROM generate_series(1, " + std::to_string(count) + ") g");
}

}  // namespace

TEST_CASE("a node with a certificate serves HTTPS and wss://, and only those", "[e2e][tls]") {
    E2eCluster cluster{"tls"};
    const auto tls = test::make_test_certificates(cluster.dir());
    auto& node = cluster.start_node_with("node-1", tls_env(tls), [&](std::uint16_t port) {
        return https_get(tls, port, "/readyz").exit_code == 0;
    });

    const auto health = https_get(tls, node.port, "/healthz");
    INFO(health.output);
    CHECK(health.exit_code == 0);
    CHECK(health.output.find("\"ok\"") != std::string::npos);
    CHECK(https_get(tls, node.port, "/healthz", "localhost").exit_code == 0);  // the DNS name
    // Browsers that reached it over HTTPS stay on HTTPS.
    const auto headers =
        test::run_command("curl -sS -D - -o /dev/null --max-time 5 --cacert " + tls.ca_file +
                          " https://127.0.0.1:" + std::to_string(node.port) + "/healthz");
    CHECK_THAT(headers.output, Catch::Contains("Strict-Transport-Security: max-age=31536000"));
    // Workers learn wss:// URLs: the default advertised URL follows the transport.
    const auto cluster_json =
        nlohmann::json::parse(https_get(tls, node.port, "/v1/cluster").output);
    CHECK(cluster_json["nodes"][0]["url"].get<std::string>().rfind("wss://127.0.0.1:", 0) == 0);

    // Plain HTTP gets no HTTP answer, and the node goes on.
    const auto plain =
        test::raw_http(node.port, "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    CHECK(plain.rfind("HTTP/1.1 200", 0) != 0);
    // An untrusted client certificate check fails on the client, not the node.
    CHECK(test::run_command("curl -sS --fail --max-time 5 https://127.0.0.1:" +
                            std::to_string(node.port) + "/healthz")
              .exit_code != 0);
    CHECK(https_get(tls, node.port, "/healthz").exit_code == 0);

    // A worker that trusts the CA runs tasks over wss://; one that does not never connects.
    auto& trusting = cluster.start_worker(
        "trusting", {"wss://127.0.0.1:" + std::to_string(node.port) + "/v1/workers"},
        {"--activity-types", "echo", "--ca-file", tls.ca_file});
    auto& doubting = cluster.start_worker(
        "doubting", {"wss://localhost:" + std::to_string(node.port) + "/v1/workers"},
        {"--activity-types", "echo"});
    stage(cluster, "tls", 100);
    REQUIRE(E2eCluster::await([&] { return cluster.count("status = 'done'") == 100; }, 20s));
    CHECK(trusting.running());
    CHECK(doubting.await_log("certificate verify failed", 10s));
    CHECK(node.process->log().find("worker=\"doubting\"") == std::string::npos);
    CHECK(node.process->running());
}

TEST_CASE("TLS settings that cannot be used stop the node at start, naming the setting",
          "[e2e][tls]") {
    E2eCluster cluster{"tls-bad"};
    const auto tls = test::make_test_certificates(cluster.dir());
    const auto run = [&](std::map<std::string, std::string> env) {
        env.emplace("OUTBOXD_DATABASE_URL", cluster.db.url());
        env.emplace("OUTBOXD_LISTEN", "127.0.0.1:0");
        test::Process node({test::bin_dir() + "/outboxd"}, env, cluster.dir() + "/bad.log");
        const auto code = node.wait(30s);
        return std::pair{code.value_or(-1), node.log()};
    };
    const auto [lone_code, lone_log] = run({{"OUTBOXD_TLS_CERT_FILE", tls.cert_file}});
    CHECK(lone_code == 2);
    CHECK(lone_log.find("OUTBOXD_TLS_KEY_FILE") != std::string::npos);
    const auto [missing_code, missing_log] =
        run({{"OUTBOXD_TLS_CERT_FILE", cluster.dir() + "/nope.pem"},
             {"OUTBOXD_TLS_KEY_FILE", tls.key_file}});
    CHECK(missing_code == 2);
    CHECK(missing_log.find("OUTBOXD_TLS_CERT_FILE") != std::string::npos);
    // A certificate and key that do not belong together.
    const auto [swapped_code, swapped_log] =
        run({{"OUTBOXD_TLS_CERT_FILE", tls.cert_file},
             {"OUTBOXD_TLS_KEY_FILE", cluster.dir() + "/ca.key"}});
    CHECK(swapped_code == 1);
    CHECK(swapped_log.find("OUTBOXD_TLS_KEY_FILE") != std::string::npos);
}
