// Where HTTP push targets may point (README, "HTTP push", Safety) through real nodes and their
// HTTP API: loopback, unspecified and localhost URLs refused by default and accepted when the
// allow-list holds them; a name the allow-list lists that resolves to loopback refused at
// connect time; a row written by plain SQL held to the same rules. Nothing here sends a
// request to a private or metadata address: refused URLs are never connected to, and every
// allowed one is on 127.0.0.1.

#include <map>
#include <string>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "e2e_cluster.hpp"
#include "receiver.hpp"

using namespace std::chrono_literals;
using nlohmann::json;
using outboxd::test::E2eCluster;
using outboxd::test::http_call;
using outboxd::test::HttpResult;

namespace {

constexpr const char* kAllowedHosts = "OUTBOXD_HTTP_ALLOWED_HOSTS";

std::map<std::string, std::string> env_with(const std::string& allowed_hosts) {
    std::map<std::string, std::string> env{{"OUTBOXD_BACKOFF_BASE_MS", "50"},
                                           {"OUTBOXD_BACKOFF_MAX_MS", "200"},
                                           {"OUTBOXD_QUOTA_CACHE_TTL_MS", "200"}};
    if (!allowed_hosts.empty()) env[kAllowedHosts] = allowed_hosts;
    return env;
}

json target_body(const std::string& url) {
    return {
        {"activity_types", {"charge"}}, {"url", url}, {"max_in_flight", 4}, {"timeout_ms", 2000}};
}

HttpResult put(const outboxd::test::NodeHandle& node, const std::string& name,
               const std::string& url) {
    return http_call(node.port, "PUT", "/v1/http-targets/" + name, target_body(url).dump());
}

json error_of(const HttpResult& result) {
    INFO(result.body);
    REQUIRE(result.status == 400);
    return json::parse(result.body)["error"];
}

}  // namespace

TEST_CASE("targets at loopback, unspecified and localhost are refused unless allowed",
          "[e2e][push]") {
    E2eCluster cluster{"push-ssrf-put"};
    // Port 9 (discard): nothing is staged, so no request is made even to an accepted target.
    const std::map<std::string, std::string> refused{{"http://127.0.0.1:9/hook", "loopback"},
                                                     {"http://0.0.0.0:9/hook", "unspecified"},
                                                     {"http://localhost:9/hook", "loopback"},
                                                     {"http://[::1]:9/hook", "loopback"}};
    auto& open = cluster.start_node("open", env_with(""));
    for (const auto& [url, kind] : refused) {
        INFO(url);
        const auto error = error_of(put(open, "t", url));
        CHECK(error["field"] == "url");
        const auto message = error["message"].get<std::string>();
        CHECK_THAT(message, Catch::Contains(kind));
        CHECK_THAT(message, Catch::Contains(kAllowedHosts));
    }
    CHECK(
        json::parse(http_call(open.port, "GET", "/v1/http-targets").body)["http_targets"].empty());

    auto& allowing = cluster.start_node("allowing", env_with("127.0.0.1, 0.0.0.0, ::1, localhost"));
    int n = 0;
    for (const auto& [url, kind] : refused) {
        INFO(url);
        const auto accepted = put(allowing, "t" + std::to_string(++n), url);
        INFO(accepted.body);
        CHECK(accepted.status == 200);
    }
    // An allow-list of names only does not open loopback addresses.
    auto& named = cluster.start_node("named", env_with("hooks.example.com"));
    CHECK(error_of(put(named, "x", "http://127.0.0.1:9/hook"))["field"] == "url");
}

TEST_CASE("a listed name that resolves to loopback fails at connect time, saying why",
          "[e2e][push]") {
    E2eCluster cluster{"push-ssrf-connect"};
    // A real receiver on 127.0.0.1: had the check let the connection through, it would count it.
    outboxd::test::Receiver receiver{cluster.dir(), "receiver", {}};
    auto& node = cluster.start_node("node-1", env_with("localhost"));
    const auto url = "http://localhost:" + std::to_string(receiver.port()) + "/hook";
    const auto accepted = put(node, "local", url);
    INFO(accepted.body);
    REQUIRE(accepted.status == 200);  // the name is listed: the PUT cannot know where it leads
    cluster.db.exec(
        "INSERT INTO outbox (workflow_id, ordinal, activity_type) VALUES ('ssrf', 0, 'charge')");
    REQUIRE(
        E2eCluster::await([&] { return cluster.count("last_error LIKE '%loopback%'") == 1; }, 30s));
    CHECK(cluster.count("last_error LIKE '%OUTBOXD_HTTP_ALLOWED_HOSTS%'") == 1);
    CHECK(cluster.count("status = 'done'") == 0);
    // The target's recent state says the same to every node's GET.
    REQUIRE(E2eCluster::await(
        [&] {
            const auto got =
                json::parse(http_call(node.port, "GET", "/v1/http-targets/local").body);
            return got["last_error"].is_string() &&
                   got["last_error"].get<std::string>().find("loopback") != std::string::npos;
        },
        10s));
    CHECK(receiver.stats()["requests"] == 0);
}

TEST_CASE("a target row at loopback written by plain SQL is refused by the node", "[e2e][push]") {
    E2eCluster cluster{"push-ssrf-sql"};
    outboxd::test::Receiver receiver{cluster.dir(), "receiver", {}};
    auto& node = cluster.start_node("node-1", env_with(""));
    cluster.db.exec(
        "INSERT INTO http_targets (name, namespace, task_queue, activity_types, url, "
        "max_in_flight, timeout_ms, headers) VALUES ('sneaky', 'default', 'default', "
        "'{charge}', '" +
        receiver.url() + "', 4, 1000, '{}')");
    REQUIRE(E2eCluster::await(
        [&] {
            const auto got =
                json::parse(http_call(node.port, "GET", "/v1/http-targets/sneaky").body);
            return got["node"]["refused"].is_string() &&
                   got["node"]["refused"].get<std::string>().find("loopback") != std::string::npos;
        },
        10s));
    cluster.db.exec(
        "INSERT INTO outbox (workflow_id, ordinal, activity_type) VALUES ('sql', 0, 'charge')");
    REQUIRE(E2eCluster::await_job_runs(node, "reconcile", 2, 10s));
    CHECK(receiver.stats()["requests"] == 0);
    CHECK(cluster.count("status = 'pending'") == 1);
}
