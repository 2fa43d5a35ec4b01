// HTTP push (README, "HTTP push") through real outboxd nodes and real outboxd-receiver
// processes: delivery, signatures, retries with backoff and Retry-After, dead letters,
// timeouts, a receiver killed and restarted, the cluster-wide bound with three nodes, a node
// killed mid-run, https, and the target resource's API and safety rules.

#include <algorithm>
#include <csignal>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <thread>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "e2e_cluster.hpp"
#include "receiver.hpp"
#include "tls_files.hpp"

using namespace outboxd;
using namespace std::chrono_literals;
using nlohmann::json;
using test::E2eCluster;
using test::http_call;
using test::Receiver;

namespace {

// Quick retries and refreshes, so that a test sees several attempts in seconds. The receivers
// listen on 127.0.0.1, a loopback address targets reach only when the allow-list holds it.
std::map<std::string, std::string> push_env(const std::map<std::string, std::string>& extra = {}) {
    std::map<std::string, std::string> env{{"OUTBOXD_BACKOFF_BASE_MS", "50"},
                                           {"OUTBOXD_BACKOFF_MAX_MS", "200"},
                                           {"OUTBOXD_QUOTA_CACHE_TTL_MS", "200"},
                                           {"OUTBOXD_POLL_INTERVAL_MS", "100"},
                                           {"OUTBOXD_HTTP_ALLOWED_HOSTS", "127.0.0.1"}};
    for (const auto& [key, value] : extra) env[key] = value;
    return env;
}

json target_body(const std::string& url, json extra = json::object()) {
    json body = {{"namespace", "default"},       {"task_queue", "default"},
                 {"activity_types", {"charge"}}, {"url", url},
                 {"max_in_flight", 16},          {"timeout_ms", 5000}};
    for (auto& [key, value] : extra.items()) body[key] = value;
    return body;
}

// PUT a target, then wait until `node` serves it (its share appears in GET).
void put_target(const test::NodeHandle& node, const std::string& name, const json& body) {
    const auto put = http_call(node.port, "PUT", "/v1/http-targets/" + name, body.dump());
    INFO(put.body);
    REQUIRE(put.status == 200);
    REQUIRE(E2eCluster::await(
        [&] {
            const auto got =
                json::parse(http_call(node.port, "GET", "/v1/http-targets/" + name).body);
            return got["node"]["share"].get<int>() > 0;
        },
        10s));
}

void stage(E2eCluster& cluster, int rows, const std::string& type = "charge",
           const std::string& prefix = "r") {
    cluster.db.exec(
        "INSERT INTO outbox (dispatch_key, workflow_id, ordinal, activity_type, input) "
        "SELECT '" +
        prefix + "-' || g, '" + prefix + "-wf-' || g, 0, '" + type +
        "', jsonb_build_object('n', g) FROM generate_series(1, " + std::to_string(rows) + ") g");
}

std::map<std::string, int> attempts_by_key(const Receiver& receiver) {
    std::map<std::string, int> out;
    for (const auto& r : receiver.requests()) ++out[r.dispatch_key];
    return out;
}

}  // namespace

TEST_CASE("rows pushed to an HTTP target are done, signed, and counted", "[e2e][push]") {
    constexpr int kRows = 300;
    E2eCluster cluster{"push-basic"};
    Receiver receiver{cluster.dir(), "receiver", {"--secret", "s3cret"}};
    auto& node = cluster.start_node("node-1", push_env());
    put_target(node, "hook", target_body(receiver.url(), {{"signing_secret", "s3cret"}}));
    stage(cluster, kRows);
    REQUIRE(E2eCluster::await([&] { return cluster.count("status = 'done'") == kRows; }, 60s));

    const auto stats = receiver.stats();
    INFO(stats.dump());
    CHECK(stats["bad_signatures"] == 0);
    CHECK(stats["distinct_keys"] == kRows);
    CHECK(stats["ok"].get<int>() >= kRows);
    CHECK(E2eCluster::metric(node, R"(outboxd_http_requests_total{code_class="2xx",target="hook"})")
              .value_or(0) >= kRows);
    CHECK(E2eCluster::metric(node, R"(outboxd_http_inflight{target="hook"})").value_or(-1) == 0);
    CHECK(E2eCluster::metric(node, R"(outboxd_http_request_seconds_count{target="hook"})")
              .value_or(0) >= kRows);
    // The target's recent state reaches the database for every node's GET.
    REQUIRE(E2eCluster::await(
        [&] {
            return !json::parse(http_call(node.port, "GET", "/v1/http-targets/hook")
                                    .body)["last_success_at"]
                        .is_null();
        },
        5s));
}

TEST_CASE("a target that signs with another secret is refused by its receiver: dead letters",
          "[e2e][push]") {
    E2eCluster cluster{"push-badsig"};
    Receiver receiver{cluster.dir(), "receiver", {"--secret", "right"}};
    auto& node = cluster.start_node("node-1", push_env({{"OUTBOXD_MAX_ATTEMPTS", "2"}}));
    put_target(node, "hook", target_body(receiver.url(), {{"signing_secret", "wrong"}}));
    stage(cluster, 5);
    // 401 is not retryable: each row is a dead letter after one request.
    REQUIRE(E2eCluster::await([&] { return cluster.count("status = 'failed'") == 5; }, 30s));
    CHECK(receiver.stats()["bad_signatures"] == 5);
    CHECK(cluster.count("last_error LIKE 'HTTP 401%'") == 5);
}

TEST_CASE("500s are retried with backoff until the receiver takes the row", "[e2e][push]") {
    constexpr int kRows = 40;
    E2eCluster cluster{"push-500"};
    Receiver receiver{cluster.dir(), "receiver", {"--fail-first", "2", "--fail-status", "500"}};
    auto& node = cluster.start_node("node-1", push_env());
    put_target(node, "hook", target_body(receiver.url()));
    stage(cluster, kRows);
    REQUIRE(E2eCluster::await([&] { return cluster.count("status = 'done'") == kRows; }, 60s));
    // Two failures then the success: three requests a row, attempts 1, 2, 3.
    const auto requests = receiver.requests();
    for (const auto& [key, count] : attempts_by_key(receiver)) {
        INFO(key);
        CHECK(count == 3);
    }
    CHECK(cluster.count("status = 'done' AND attempt = 2") == kRows);
    // The second try waited for the backoff (50 ms base) after the first.
    std::map<std::string, std::vector<std::int64_t>> times;
    std::map<std::string, std::vector<int>> deliveries;
    for (const auto& r : requests) {
        times[r.dispatch_key].push_back(r.epoch_ms);
        deliveries[r.dispatch_key].push_back(r.delivery);
    }
    for (const auto& [key, at] : times) {
        REQUIRE(at.size() == 3);
        CHECK(at[1] - at[0] >= 45);
        // Outboxd-Delivery counts the row's deliveries, one-based.
        CHECK(deliveries[key] == std::vector{1, 2, 3});
    }
    CHECK(cluster.count("deliveries = 3") == kRows);
    CHECK(E2eCluster::metric(node, R"(outboxd_http_requests_total{code_class="5xx",target="hook"})")
              .value_or(0) == 2 * kRows);
}

TEST_CASE("a 429 with Retry-After waits at least that long", "[e2e][push]") {
    E2eCluster cluster{"push-429"};
    Receiver receiver{cluster.dir(),
                      "receiver",
                      {"--fail-first", "1", "--fail-status", "429", "--retry-after", "2"}};
    auto& node = cluster.start_node("node-1", push_env());
    put_target(node, "hook", target_body(receiver.url()));
    stage(cluster, 3);
    REQUIRE(E2eCluster::await([&] { return cluster.count("status = 'done'") == 3; }, 30s));
    std::map<std::string, std::vector<std::int64_t>> times;
    for (const auto& r : receiver.requests()) times[r.dispatch_key].push_back(r.epoch_ms);
    for (const auto& [key, at] : times) {
        REQUIRE(at.size() == 2);
        INFO(key << " retried after " << at[1] - at[0] << " ms");
        CHECK(at[1] - at[0] >= 1900);  // 2 s, not the 50 ms backoff
    }
}

TEST_CASE("a 400 makes a dead letter with the status and the body in last_error", "[e2e][push]") {
    E2eCluster cluster{"push-400"};
    Receiver receiver{cluster.dir(), "receiver", {"--always-status", "400"}};
    auto& node = cluster.start_node("node-1", push_env());
    put_target(node, "hook", target_body(receiver.url()));
    stage(cluster, 4);
    REQUIRE(E2eCluster::await([&] { return cluster.count("status = 'failed'") == 4; }, 30s));
    CHECK(cluster.count("last_error = 'HTTP 400: receiver: always 400' AND attempt = 1") == 4);
    CHECK(receiver.stats()["requests"] == 4);  // never retried
    const auto dead = json::parse(http_call(node.port, "GET", "/v1/dead-letters").body);
    CHECK(dead["dead_letters"].size() == 4);
    // The recorded error is shown with the target.
    REQUIRE(E2eCluster::await(
        [&] {
            const auto got = json::parse(http_call(node.port, "GET", "/v1/http-targets/hook").body);
            return got["last_error"].is_string() &&
                   got["last_error"].get<std::string>().starts_with("HTTP 400");
        },
        5s));
}

TEST_CASE("a receiver slower than timeout_ms is given up on and retried", "[e2e][push]") {
    E2eCluster cluster{"push-slow"};
    Receiver receiver{cluster.dir(), "receiver", {"--delay-ms", "1500", "--delay-attempts", "1"}};
    auto& node = cluster.start_node("node-1", push_env());
    put_target(node, "hook", target_body(receiver.url(), {{"timeout_ms", 300}}));
    stage(cluster, 3);
    REQUIRE(E2eCluster::await([&] { return cluster.count("status = 'done'") == 3; }, 30s));
    CHECK(cluster.count("attempt = 1") == 3);  // one timed out, the second done
    CHECK(E2eCluster::metric(node,
                             R"(outboxd_http_requests_total{code_class="timeout",target="hook"})")
              .value_or(0) == 3);
    for (const auto& [key, count] : attempts_by_key(receiver)) CHECK(count == 2);
}

TEST_CASE("a receiver killed mid-run and started again: every row done, none lost", "[e2e][push]") {
    constexpr int kRows = 3000;
    E2eCluster cluster{"push-restart"};
    Receiver receiver{cluster.dir(), "receiver", {"--delay-ms", "2"}};
    auto& node = cluster.start_node("node-1", push_env());
    put_target(node, "hook", target_body(receiver.url(), {{"max_in_flight", 32}}));
    stage(cluster, kRows);
    REQUIRE(E2eCluster::await([&] { return cluster.count("status = 'done'") > kRows / 4; }, 60s));
    receiver.kill();
    // The node met the receiver gone.
    REQUIRE(E2eCluster::await_growth(
        node, R"(outboxd_http_requests_total{code_class="error",target="hook"})", 1, 20s));
    const auto done_while_down = cluster.count("status = 'done'");
    CHECK(done_while_down < kRows);
    receiver.restart();
    REQUIRE(E2eCluster::await([&] { return cluster.count("status = 'done'") == kRows; }, 120s));
    CHECK(cluster.count("status <> 'done'") == 0);
    CHECK(
        E2eCluster::metric(node, R"(outboxd_http_requests_total{code_class="error",target="hook"})")
            .value_or(0) > 0);
}

TEST_CASE(
    "max_in_flight bounds concurrent requests across three nodes, and a node killed "
    "mid-run loses nothing",
    "[e2e][push]") {
    constexpr int kRows = 1200;
    constexpr int kBound = 6;
    E2eCluster cluster{"push-cluster"};
    Receiver receiver{cluster.dir(), "receiver", {"--delay-ms", "20"}};
    const auto env = push_env({{"OUTBOXD_LEASE_TTL_MS", "1500"}});
    auto& first = cluster.start_node("node-1", env);
    auto& victim = cluster.start_node("node-2", env);
    cluster.start_node("node-3", env);
    REQUIRE(E2eCluster::await([&] { return test::balanced_over(first, 3); }, 20s));
    put_target(first, "hook", target_body(receiver.url(), {{"max_in_flight", kBound}}));
    for (auto& node : cluster.nodes) {
        REQUIRE(E2eCluster::await(
            [&] {
                return json::parse(http_call(node.port, "GET", "/v1/http-targets/hook")
                                       .body)["node"]["share"] == 2;
            },
            10s));
    }
    stage(cluster, kRows);
    REQUIRE(E2eCluster::await([&] { return cluster.count("status = 'done'") > kRows / 3; }, 60s));
    const auto busiest = receiver.stats()["max_concurrent"].get<int>();
    CHECK(busiest <= kBound);
    CHECK(busiest >= kBound - 1);  // the bound is used, not only respected

    victim.process->signal(SIGKILL);
    REQUIRE(victim.process->wait(10s));
    REQUIRE(E2eCluster::await([&] { return cluster.count("status = 'done'") == kRows; }, 120s));
    CHECK(cluster.count("status <> 'done'") == 0);
    CHECK(receiver.stats()["distinct_keys"] == kRows);
}

TEST_CASE("an https target is verified against its CA file", "[e2e][push]") {
    E2eCluster cluster{"push-https"};
    const auto tls = test::make_test_certificates(cluster.dir());
    Receiver receiver{
        cluster.dir(), "receiver", {"--tls-cert", tls.cert_file, "--tls-key", tls.key_file}};
    auto& node = cluster.start_node("node-1", push_env({{"OUTBOXD_MAX_ATTEMPTS", "3"}}));
    const auto https = "https://localhost:" + std::to_string(receiver.port()) + "/hook";
    put_target(node, "trusted", target_body(https, {{"ca_file", tls.ca_file}}));
    stage(cluster, 5);
    REQUIRE(E2eCluster::await([&] { return cluster.count("status = 'done'") == 5; }, 30s));
    // Without the CA file the system store does not know the throwaway CA: every try fails.
    REQUIRE(http_call(node.port, "DELETE", "/v1/http-targets/trusted").status == 200);
    put_target(node, "untrusted", target_body(https));
    stage(cluster, 2, "charge", "u");
    REQUIRE(E2eCluster::await([&] { return cluster.count("status = 'failed'") == 2; }, 30s));
    CHECK(cluster.count("status = 'failed' AND last_error LIKE '%TLS handshake%'") == 2);
}

TEST_CASE("the target resource: admin only, validated field by field, secret never shown",
          "[e2e][push]") {
    E2eCluster cluster{"push-api"};
    auto& open = cluster.start_node("open", push_env());
    const auto put = [&](const std::string& name, const json& body) {
        return http_call(open.port, "PUT", "/v1/http-targets/" + name, body.dump());
    };
    const auto field_of = [](const test::HttpResult& result) {
        INFO(result.body);
        CHECK(result.status == 400);
        const auto body = json::parse(result.body);
        return body["error"].contains("field") ? body["error"]["field"].get<std::string>() : "";
    };
    CHECK(field_of(put("t", target_body("ftp://x/"))) == "url");
    CHECK(field_of(put("t", target_body("http://169.254.169.254/latest"))) == "url");
    CHECK(field_of(put("t", target_body("http://x/", {{"max_in_flight", 0}}))) == "max_in_flight");
    CHECK(field_of(put("t", target_body("http://x/", {{"timeout_ms", "fast"}}))) == "timeout_ms");
    CHECK(field_of(put("t", target_body("http://x/", {{"headers", {{"Host", "y"}}}}))) ==
          "headers");
    CHECK(field_of(put("t", target_body("http://x/", {{"headers", {{"X", "a\r\nb"}}}}))) ==
          "headers");
    CHECK(field_of(put("t", target_body("http://x/", {{"surprise", 1}}))) == "surprise");
    CHECK(field_of(put("bad%21name", target_body("http://x/"))) == "name");
    CHECK(http_call(open.port, "PUT", "/v1/http-targets/t", "{not json").status == 400);
    CHECK(json::parse(http_call(open.port, "GET", "/v1/http-targets").body)["http_targets"]
              .empty());  // nothing was stored

    const auto stored = put("t", target_body("http://127.0.0.1:9/hook",
                                             {{"signing_secret", "hush"},
                                              {"headers", {{"Authorization", "Bearer t0ken"}}}}));
    REQUIRE(stored.status == 200);
    for (const auto& text : {stored.body, http_call(open.port, "GET", "/v1/http-targets/t").body,
                             http_call(open.port, "GET", "/v1/http-targets").body}) {
        CHECK(text.find("hush") == std::string::npos);
        CHECK(text.find("t0ken") == std::string::npos);
    }
    const auto got = json::parse(http_call(open.port, "GET", "/v1/http-targets/t").body);
    CHECK(got["signing_secret_set"] == true);
    CHECK(got["headers"]["Authorization"] == "<redacted>");
    CHECK(http_call(open.port, "DELETE", "/v1/http-targets/t").status == 200);
    CHECK(http_call(open.port, "DELETE", "/v1/http-targets/t").status == 404);
    CHECK(http_call(open.port, "GET", "/v1/http-targets/t").status == 404);
    CHECK(http_call(open.port, "POST", "/v1/http-targets/t").status == 405);

    // With an admin token, only the token sets targets; with an allow-list, only listed hosts.
    auto& guarded = cluster.start_node(
        "guarded", push_env({{"OUTBOXD_ADMIN_TOKEN", "adm"},
                             {"OUTBOXD_HTTP_ALLOWED_HOSTS", "hooks.example.com, *.corp.example"}}));
    const auto put_guarded = [&](const std::string& url) {
        return http_call(guarded.port, "PUT", "/v1/http-targets/g", target_body(url).dump(), "adm");
    };
    const auto body = target_body("http://hooks.example.com/x").dump();
    CHECK(http_call(guarded.port, "PUT", "/v1/http-targets/g", body).status == 401);
    CHECK(http_call(guarded.port, "PUT", "/v1/http-targets/g", body, "adm").status == 200);
    CHECK(put_guarded("https://a.b.corp.example/").status == 200);
    CHECK(field_of(put_guarded("http://evil.example.org/")) == "url");
    CHECK(field_of(put_guarded("http://127.0.0.1:9/")) == "url");
    CHECK(field_of(put_guarded("http://corp.example/")) == "url");  // the suffix, not the name
}

TEST_CASE("a target row written by plain SQL that breaks the rules is refused, not used",
          "[e2e][push]") {
    E2eCluster cluster{"push-sql"};
    Receiver receiver{cluster.dir(), "receiver", {}};
    auto& node = cluster.start_node("node-1", push_env());
    cluster.db.exec(
        "INSERT INTO http_targets (name, namespace, task_queue, activity_types, url, "
        "max_in_flight, timeout_ms, headers) VALUES ('sneaky', 'default', 'default', "
        "'{charge}', 'http://127.0.0.1:" +
        std::to_string(receiver.port()) + "/x', 4, 1000, '{\"Content-Length\": \"0\"}')");
    REQUIRE(E2eCluster::await(
        [&] {
            const auto got =
                json::parse(http_call(node.port, "GET", "/v1/http-targets/sneaky").body);
            return got["node"]["refused"].is_string();
        },
        10s));
    stage(cluster, 2);
    REQUIRE(E2eCluster::await_job_runs(node, "reconcile", 2, 10s));
    CHECK(receiver.stats()["requests"] == 0);
    CHECK(cluster.count("status = 'pending'") == 2);
    REQUIRE(node.process->log_count("event=target_refused") == 1);
}

TEST_CASE("the README's Python receiver verifies signatures and takes the rows", "[e2e][push]") {
    const std::string source = std::string{OUTBOXD_SOURCE_DIR} + "/docs/examples/http_receiver.py";
    // The README shows the file as it is.
    const auto read = [](const std::string& path) {
        std::ifstream in{path};
        return std::string{std::istreambuf_iterator<char>{in}, {}};
    };
    const auto example = read(source);
    REQUIRE_FALSE(example.empty());
    CHECK(read(std::string{OUTBOXD_SOURCE_DIR} + "/README.md").find(example) != std::string::npos);

    E2eCluster cluster{"push-python"};
    auto& node = cluster.start_node("node-1", push_env());
    const auto port = test::free_port();
    test::Process receiver{{"/usr/bin/python3", source, std::to_string(port)},
                           {{"OUTBOXD_SECRET", "py-secret"}},
                           cluster.dir() + "/python-receiver.log"};
    REQUIRE(E2eCluster::await(
        [&] {
            try {
                return http_call(port, "GET", "/").status > 0;
            } catch (const std::exception&) {
                return false;
            }
        },
        10s));
    const auto url = "http://127.0.0.1:" + std::to_string(port) + "/hook";
    put_target(node, "py", target_body(url, {{"signing_secret", "py-secret"}}));
    stage(cluster, 20);
    REQUIRE(E2eCluster::await([&] { return cluster.count("status = 'done'") == 20; }, 30s));
    // Signed with another secret, the receiver refuses: dead letters with the 401.
    REQUIRE(http_call(node.port, "DELETE", "/v1/http-targets/py").status == 200);
    put_target(node, "py-wrong", target_body(url, {{"signing_secret", "not-it"}}));
    stage(cluster, 2, "charge", "w");
    REQUIRE(E2eCluster::await([&] { return cluster.count("status = 'failed'") == 2; }, 30s));
    CHECK(cluster.count("last_error = 'HTTP 401: bad signature'") == 2);
    // Standard Webhooks' signature, which the receiver checks when it is there.
    REQUIRE(http_call(node.port, "DELETE", "/v1/http-targets/py-wrong").status == 200);
    put_target(node, "py-standard",
               target_body(url, {{"signing_secret", "py-secret"}, {"standard_webhooks", true}}));
    stage(cluster, 3, "charge", "sw");
    REQUIRE(E2eCluster::await([&] { return cluster.count("status = 'done'") == 23; }, 30s));
    REQUIRE(http_call(node.port, "DELETE", "/v1/http-targets/py-standard").status == 200);
    put_target(node, "py-standard-wrong",
               target_body(url, {{"signing_secret", "not-it"}, {"standard_webhooks", true}}));
    stage(cluster, 1, "charge", "sww");
    REQUIRE(E2eCluster::await([&] { return cluster.count("status = 'failed'") == 3; }, 30s));
}

TEST_CASE("an answer larger than the response bound is judged by its status, its body unread",
          "[e2e][push]") {
    E2eCluster cluster{"push-bigbody"};
    Receiver ok{cluster.dir(), "ok", {"--body-bytes", "200000"}};
    Receiver refusing{
        cluster.dir(), "refusing", {"--always-status", "422", "--body-bytes", "200000"}};
    auto& node =
        cluster.start_node("node-1", push_env({{"OUTBOXD_HTTP_MAX_RESPONSE_BYTES", "4096"}}));
    put_target(node, "ok", target_body(ok.url()));
    stage(cluster, 5);
    REQUIRE(E2eCluster::await([&] { return cluster.count("status = 'done'") == 5; }, 30s));
    REQUIRE(http_call(node.port, "DELETE", "/v1/http-targets/ok").status == 200);
    put_target(node, "refusing", target_body(refusing.url()));
    stage(cluster, 2, "charge", "big");
    REQUIRE(E2eCluster::await([&] { return cluster.count("status = 'failed'") == 2; }, 30s));
    CHECK(cluster.count("last_error = 'HTTP 422: (response body over 4096 bytes, not read)'") == 2);
}

TEST_CASE("a slow target holds back only its own route", "[e2e][push]") {
    E2eCluster cluster{"push-isolation"};
    Receiver slow{cluster.dir(), "slow", {"--delay-ms", "3000"}};
    auto& node = cluster.start_node("node-1", push_env());
    put_target(
        node, "slow",
        target_body(slow.url(),
                    {{"namespace", "webhooks"}, {"max_in_flight", 2}, {"timeout_ms", 10000}}));
    cluster.start_worker("w1", {node.worker_url()},
                         {"--activity-types", "noop", "--max-in-flight", "64"});
    cluster.db.exec(
        "INSERT INTO outbox (workflow_id, ordinal, activity_type, namespace) "
        "SELECT 'hook-' || g, 0, 'charge', 'webhooks' FROM generate_series(1, 20) g");
    stage(cluster, 500, "noop");
    // The WebSocket route drains while the target holds its two slots for seconds each.
    REQUIRE(E2eCluster::await(
        [&] { return cluster.count("status = 'done' AND namespace = 'default'") == 500; }, 20s));
    CHECK(cluster.count("status = 'done' AND namespace = 'webhooks'") <= 4);
    CHECK(cluster.count("status = 'claimed' AND namespace = 'webhooks'") <= 2);
    CHECK(slow.stats()["max_concurrent"].get<int>() <= 2);
}

TEST_CASE(
    "target secrets are encrypted at rest, kept by a PUT that leaves them out, never shown, "
    "and still sign and authorize every request",
    "[e2e][push][secrets]") {
    E2eCluster cluster{"push-secrets"};
    const auto file = [&](const std::string& name, const std::string& content) {
        auto path = cluster.dir() + "/" + name;
        std::ofstream{path} << content << '\n';
        return path;
    };
    const std::string key = "k1:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=";
    Receiver receiver{cluster.dir(),
                      "receiver",
                      {"--secret-file", file("receiver-secret", "sig-s3cret"), "--require-header",
                       "Authorization: Bearer hdr-t0ken"}};
    // Secrets from files, and the receiver's address allowed explicitly.
    const auto env = push_env({{"OUTBOXD_SECRETS_KEY_FILE", file("keys", key)},
                               {"OUTBOXD_ADMIN_TOKEN_FILE", file("admin-token", "adm")},
                               {"OUTBOXD_HTTP_ALLOWED_HOSTS", "127.0.0.1"},
                               {"OUTBOXD_MAX_ATTEMPTS", "2"}});
    auto& node = cluster.start_node("node-1", env);
    const auto call = [&](const std::string& method, const std::string& path,
                          const std::string& body = "") {
        return http_call(node.port, method, path, body, "adm");
    };
    REQUIRE(http_call(node.port, "GET", "/v1/http-targets").status == 401);  // the token holds

    auto body = target_body(
        receiver.url() + "?token=q-s3cret",
        {{"signing_secret", "sig-s3cret"}, {"headers", {{"Authorization", "Bearer hdr-t0ken"}}}});
    const auto put = call("PUT", "/v1/http-targets/hook", body.dump());
    INFO(put.body);
    REQUIRE(put.status == 200);

    // In the database: ciphertext only, under key k1.
    const auto stored = cluster.db.exec(
        "SELECT signing_secret || ' ' || headers::text, url "
        "FROM http_targets WHERE name = 'hook'");
    const auto columns = stored[0][0].as<std::string>();
    INFO(columns);
    CHECK(columns.starts_with("enc:v1:k1:"));
    CHECK(columns.find("sig-s3cret") == std::string::npos);
    CHECK(columns.find("hdr-t0ken") == std::string::npos);
    CHECK(stored[0][1].as<std::string>().ends_with("?token=q-s3cret"));  // the node needs it

    // Shown: that a secret is set and how it is kept, never a secret, a header value or the
    // URL's query.
    const auto shown = [&] {
        const auto one = call("GET", "/v1/http-targets/hook").body;
        for (const auto& text : {one, call("GET", "/v1/http-targets").body}) {
            CHECK(text.find("sig-s3cret") == std::string::npos);
            CHECK(text.find("hdr-t0ken") == std::string::npos);
            CHECK(text.find("q-s3cret") == std::string::npos);
        }
        return json::parse(one);
    };
    auto got = shown();
    CHECK(got["url"] == receiver.url() + "?…");
    CHECK(got["signing_secret_set"] == true);
    CHECK(got["headers"]["Authorization"] == "<redacted>");
    CHECK(got["secrets_at_rest"]["encrypted"] == 2);
    CHECK(got["secrets_at_rest"]["clear"] == 0);
    CHECK(got["secrets_at_rest"]["key_ids"] == json::array({"k1"}));
    CHECK(put.body.find("q-s3cret") == std::string::npos);

    // A PUT that leaves the secret out keeps it (and GET's redacted values are not taken back).
    body.erase("signing_secret");
    body["max_in_flight"] = 8;
    REQUIRE(call("PUT", "/v1/http-targets/hook", body.dump()).status == 200);
    got = shown();
    CHECK(got["signing_secret_set"] == true);
    CHECK(got["max_in_flight"] == 8);
    auto redacted = body;
    redacted["headers"]["Authorization"] = "<redacted>";
    CHECK(call("PUT", "/v1/http-targets/hook", redacted.dump()).status == 400);
    REQUIRE(E2eCluster::await(
        [&] { return shown()["node"]["share"].get<int>() > 0 && shown()["max_in_flight"] == 8; },
        10s));

    // Decrypted for every request: signed with the kept secret, authorized by the header.
    stage(cluster, 20);
    REQUIRE(E2eCluster::await([&] { return cluster.count("status = 'done'") == 20; }, 30s));
    CHECK(receiver.stats()["bad_signatures"] == 0);
    CHECK(receiver.stats()["bad_headers"] == 0);

    // null clears it: requests go unsigned, and this receiver refuses them.
    body["signing_secret"] = nullptr;
    REQUIRE(call("PUT", "/v1/http-targets/hook", body.dump()).status == 200);
    CHECK(shown()["signing_secret_set"] == false);
    CHECK(shown()["secrets_at_rest"]["encrypted"] == 1);
    stage(cluster, 1, "charge", "unsigned");
    REQUIRE(E2eCluster::await([&] { return cluster.count("status = 'failed'") == 1; }, 30s));
    CHECK(cluster.count("last_error = 'HTTP 401: bad signature'") == 1);

    // A node without the key cannot use the target and says why; the node itself runs on.
    auto keyless_env = env;
    keyless_env.erase("OUTBOXD_SECRETS_KEY_FILE");
    auto& keyless = cluster.start_node("node-2", keyless_env);
    REQUIRE(E2eCluster::await(
        [&] {
            const auto seen = json::parse(
                http_call(keyless.port, "GET", "/v1/http-targets/hook", "", "adm").body);
            return seen["node"]["refused"].is_string() &&
                   seen["node"]["refused"].get<std::string>().find("key id 'k1'") !=
                       std::string::npos;
        },
        10s));
    CHECK(http_call(keyless.port, "GET", "/readyz").status == 200);
    REQUIRE(E2eCluster::await(
        [&] {
            const auto last = shown()["last_error"];
            return last.is_string() &&
                   last.get<std::string>().find("node cannot use the target") != std::string::npos;
        },
        10s));
}

TEST_CASE("a node with a bad secrets key refuses to start, naming the setting, not the key",
          "[e2e][push][secrets]") {
    E2eCluster cluster{"push-bad-key"};
    const std::string key = "k1:c2hvcnQta2V5LWJ5dGVz";  // 15 bytes, not 32
    test::Process node{{test::bin_dir() + "/outboxd"},
                       {{"OUTBOXD_DATABASE_URL", cluster.db.url()},
                        {"OUTBOXD_LISTEN", "127.0.0.1:0"},
                        {"OUTBOXD_SECRETS_KEY", key}},
                       cluster.dir() + "/node.log"};
    const auto status = node.wait(20s);
    REQUIRE(status);
    CHECK(*status == 2);
    const auto log = node.log();
    INFO(log);
    CHECK(log.find("--secrets-key (OUTBOXD_SECRETS_KEY)") != std::string::npos);
    CHECK(log.find("c2hvcnQta2V5") == std::string::npos);
}

TEST_CASE("outboxd reseal-secrets encrypts stored secrets under the first key",
          "[e2e][push][secrets]") {
    E2eCluster cluster{"push-reseal"};
    // A target from before any key: its secret and header value in clear.
    cluster.db.exec(
        "INSERT INTO http_targets (name, namespace, task_queue, activity_types, url, "
        "max_in_flight, timeout_ms, signing_secret, headers) VALUES ('old', 'default', "
        "'default', '{charge}', 'http://127.0.0.1:9/x', 4, 1000, 'clear-s3cret', "
        "'{\"Authorization\": \"Bearer clear-t0ken\"}')");
    const auto reseal = [&](const std::string& keys) {
        test::Process run{
            {test::bin_dir() + "/outboxd", "reseal-secrets"},
            {{"OUTBOXD_DATABASE_URL", cluster.db.url()}, {"OUTBOXD_SECRETS_KEY", keys}},
            cluster.dir() + "/reseal.log"};
        const auto status = run.wait(30s);
        REQUIRE(status);
        return *status;
    };
    const auto stored = [&] {
        return cluster.db
            .exec("SELECT signing_secret || ' ' || headers::text FROM http_targets")[0][0]
            .as<std::string>();
    };
    const std::string k1 = "k1:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=";
    const std::string k2 = "k2:ZGVmZ2hpamtsbW5vcHFyc3R1dnd4eXp7fH1+f4CBgoM=";
    CHECK(reseal(k1) == 0);
    auto text = stored();
    CHECK(text.starts_with("enc:v1:k1:"));
    CHECK(text.find("s3cret") == std::string::npos);
    CHECK(text.find("t0ken") == std::string::npos);
    // Rotation: the new key first, the old one after it.
    CHECK(reseal(k2 + "," + k1) == 0);
    text = stored();
    CHECK(text.starts_with("enc:v1:k2:"));
    CHECK(text.find("enc:v1:k1:") == std::string::npos);
    // Without the key the values name, nothing changes and the run says so.
    CHECK(reseal(k1) == 1);
    CHECK(stored() == text);
}

TEST_CASE("two databases may each have a target of one name: each delivers its own rows",
          "[e2e][push][databases]") {
    E2eCluster cluster{"push-two-databases"};
    Receiver receiver{cluster.dir(), "receiver", {}};
    cluster.add_database("billing");
    auto env = push_env();
    env.merge(cluster.databases_env("orders"));
    auto& node = cluster.start_node("node-1", env);
    for (const std::string database : {"orders", "billing"}) {
        const auto put = http_call(node.port, "PUT", "/v1/http-targets/hook?database=" + database,
                                   target_body(receiver.url()).dump());
        INFO(put.body);
        REQUIRE(put.status == 200);
    }
    stage(cluster, 20, "charge", "orders");
    cluster.database("billing").exec(
        "INSERT INTO outbox (dispatch_key, workflow_id, ordinal, activity_type) SELECT "
        "'billing-' || g, 'billing-wf-' || g, 0, 'charge' FROM generate_series(1, 20) g");
    const auto done = [](const test::TestDatabase& db) {
        return db.exec("SELECT count(*) FROM outbox WHERE status = 'done'")[0][0].as<int>();
    };
    REQUIRE(E2eCluster::await(
        [&] { return done(cluster.db) == 20 && done(cluster.database("billing")) == 20; }, 30s));
    CHECK(attempts_by_key(receiver).size() == 40);
    for (const std::string database : {"orders", "billing"}) {
        CHECK(
            E2eCluster::metric(node, R"(outboxd_http_requests_total{code_class="2xx",database=")" +
                                         database + R"(",target="hook"})")
                .value_or(-1) == 20);
    }
}
