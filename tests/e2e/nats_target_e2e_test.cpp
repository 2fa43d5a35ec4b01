// NATS JetStream targets (README, "NATS JetStream targets") through a real outboxd node and a
// real nats-server: rows published and done on the PubAck, with the body and headers the
// README promises; a subject no stream is bound to makes dead letters; wrong credentials are a
// retried error shown on the target; the server killed mid-run and restarted loses no row, and
// a redelivery is dropped by the stream's duplicate window; the target's API.

#include <algorithm>
#include <map>
#include <set>
#include <thread>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "brokers.hpp"
#include "e2e_cluster.hpp"

using namespace outboxd;
using namespace std::chrono_literals;
using nlohmann::json;
using test::E2eCluster;
using test::http_call;

namespace {

std::map<std::string, std::string> nats_env(const std::map<std::string, std::string>& extra = {}) {
    std::map<std::string, std::string> env{{"OUTBOXD_BACKOFF_BASE_MS", "50"},
                                           {"OUTBOXD_BACKOFF_MAX_MS", "300"},
                                           {"OUTBOXD_QUOTA_CACHE_TTL_MS", "200"},
                                           {"OUTBOXD_POLL_INTERVAL_MS", "100"},
                                           {"OUTBOXD_HTTP_ALLOWED_HOSTS", "127.0.0.1"}};
    for (const auto& [key, value] : extra) env[key] = value;
    return env;
}

json nats_body(const std::string& url, json extra = json::object()) {
    json body = {{"kind", "nats"},          {"namespace", "default"},
                 {"activity_types", {"order.paid", "order.shipped"}},
                 {"url", url},              {"subject", "orders.{activity_type}"},
                 {"max_in_flight", 256},    {"timeout_ms", 3000}};
    for (auto& [key, value] : extra.items()) body[key] = value;
    return body;
}

json get_target(const test::NodeHandle& node, const std::string& name) {
    return json::parse(http_call(node.port, "GET", "/v1/targets/" + name).body);
}

// PUT a target, then wait until `node` is connected to its server.
void put_connected(const test::NodeHandle& node, const std::string& name, const json& body) {
    const auto put = http_call(node.port, "PUT", "/v1/targets/" + name, body.dump());
    INFO(put.body);
    REQUIRE(put.status == 200);
    REQUIRE(E2eCluster::await([&] { return get_target(node, name)["node"]["connected"] == true; },
                              15s));
}

void stage(E2eCluster& cluster, int rows, const std::string& type = "order.paid",
           const std::string& prefix = "r") {
    cluster.db.exec(
        "INSERT INTO outbox (dispatch_key, workflow_id, ordinal, activity_type, input) "
        "SELECT '" +
        prefix + "-' || g, 'order-' || g, 0, '" + type +
        "', jsonb_build_object('n', g) FROM generate_series(1, " + std::to_string(rows) + ") g");
}

}  // namespace

TEST_CASE("rows published to a NATS JetStream target are done on the PubAck, with their headers",
          "[e2e][nats]") {
    constexpr int kRows = 2000;
    E2eCluster cluster{"nats-basic"};
    test::NatsServer nats{cluster.dir() + "/nats"};
    test::create_stream(nats.url(), "ORDERS", {"orders.>"});
    auto& node = cluster.start_node("node-1", nats_env());
    put_connected(node, "orders", nats_body(nats.url()));
    stage(cluster, kRows);
    stage(cluster, 1, "order.shipped", "s");
    REQUIRE(E2eCluster::await([&] { return cluster.count("status = 'done'") == kRows + 1; }, 60s));
    CHECK(test::stream_messages(nats.url(), "ORDERS") == kRows + 1);

    const auto stored = test::stream_contents(nats.url(), "ORDERS");
    std::set<std::string> ids;
    for (const auto& message : stored) ids.insert(message.message_id);
    CHECK(ids.size() == kRows + 1);
    const auto shipped = std::find_if(stored.begin(), stored.end(),
                                      [](const auto& m) { return m.message_id == "s-1"; });
    REQUIRE(shipped != stored.end());
    // The body is the row's input as is; the task's fields are headers.
    CHECK(shipped->subject == "orders.order.shipped");
    CHECK(json::parse(shipped->data) == json{{"n", 1}});
    CHECK(shipped->headers.at("Nats-Msg-Id") == "s-1");
    CHECK(shipped->headers.at("Outboxd-Dispatch-Key") == "s-1");
    CHECK(shipped->headers.at("Outboxd-Workflow-Id") == "order-1");
    CHECK(shipped->headers.at("Outboxd-Activity-Type") == "order.shipped");
    CHECK(shipped->headers.at("Outboxd-Namespace") == "default");
    CHECK(shipped->headers.at("Outboxd-Database") == "default");
    CHECK(shipped->headers.at("Outboxd-Attempt") == "1");
    CHECK(shipped->headers.at("Outboxd-Delivery") == "1");
    // The PubAck is kept as the row's result.
    const auto result = json::parse(
        cluster.db.exec("SELECT result::text FROM outbox WHERE dispatch_key = 's-1'")[0][0]
            .as<std::string>());
    CHECK(result["stream"] == "ORDERS");
    CHECK(result["sequence"].get<int>() >= 1);

    const auto shown = get_target(node, "orders");
    CHECK(shown["kind"] == "nats");
    CHECK(shown["subject"] == "orders.{activity_type}");
    CHECK(shown["body"] == "input");
    REQUIRE(E2eCluster::await([&] { return !get_target(node, "orders")["last_success_at"].is_null(); },
                              5s));
    // The alias sees HTTP targets only.
    CHECK(json::parse(http_call(node.port, "GET", "/v1/http-targets").body)["http_targets"].empty());
    CHECK(http_call(node.port, "GET", "/v1/http-targets/orders").status == 404);
    CHECK(json::parse(http_call(node.port, "GET", "/v1/targets").body)["targets"].size() == 1);
}

TEST_CASE("a NATS subject no stream is bound to makes dead letters with the broker's words",
          "[e2e][nats]") {
    E2eCluster cluster{"nats-nostream"};
    test::NatsServer nats{cluster.dir() + "/nats"};
    test::create_stream(nats.url(), "ORDERS", {"orders.>"});
    auto& node = cluster.start_node("node-1", nats_env());
    put_connected(node, "stray", nats_body(nats.url(), {{"subject", "nowhere.{activity_type}"}}));
    stage(cluster, 5);
    REQUIRE(E2eCluster::await([&] { return cluster.count("status = 'failed'") == 5; }, 30s));
    CHECK(cluster.count("last_error LIKE '%no JetStream stream is bound to subject%'") == 5);
    CHECK(test::stream_messages(nats.url(), "ORDERS") == 0);
}

TEST_CASE("wrong NATS credentials are a retried error shown on the target, then fixed",
          "[e2e][nats]") {
    E2eCluster cluster{"nats-auth"};
    test::NatsServer nats{cluster.dir() + "/nats", {"app", "right", ""}};
    test::create_stream(nats.client_url(), "ORDERS", {"orders.>"});
    auto& node = cluster.start_node("node-1", nats_env());
    auto body = nats_body(nats.url(), {{"user", "app"}, {"password", "wrong"}});
    REQUIRE(http_call(node.port, "PUT", "/v1/targets/orders", body.dump()).status == 200);
    stage(cluster, 20);
    REQUIRE(E2eCluster::await(
        [&] {
            const auto shown = get_target(node, "orders");
            return shown["node"]["connected"] == false && !shown["node"]["last_error"].is_null();
        },
        15s));
    const auto shown = get_target(node, "orders");
    INFO(shown.dump());
    CHECK(shown.dump().find("wrong") == std::string::npos);  // never shown
    CHECK(shown["credentials_set"] == json{"password"});
    // Nothing was claimed for a target that cannot take it: no attempt spent.
    CHECK(cluster.count("status = 'pending' AND attempt = 0") == 20);
    body["password"] = "right";
    REQUIRE(http_call(node.port, "PUT", "/v1/targets/orders", body.dump()).status == 200);
    REQUIRE(E2eCluster::await([&] { return cluster.count("status = 'done'") == 20; }, 30s));
    CHECK(test::stream_messages(nats.client_url(), "ORDERS") == 20);
}

TEST_CASE("a NATS server killed mid-run and restarted: every row done, none lost, none stored twice",
          "[e2e][nats]") {
    constexpr int kRows = 20000;
    E2eCluster cluster{"nats-kill"};
    test::NatsServer nats{cluster.dir() + "/nats"};
    test::create_stream(nats.url(), "ORDERS", {"orders.>"});
    auto& node = cluster.start_node("node-1", nats_env());
    put_connected(node, "orders", nats_body(nats.url()));
    stage(cluster, kRows);
    REQUIRE(E2eCluster::await([&] { return cluster.count("status = 'done'") > kRows / 10; }, 60s));
    nats.kill();
    std::this_thread::sleep_for(2s);
    nats.restart();
    REQUIRE(E2eCluster::await([&] { return cluster.count("status = 'done'") == kRows; }, 120s));
    CHECK(cluster.count("status <> 'done'") == 0);
    // What the stream stored before the kill and after: every row once (a republished row's
    // Nats-Msg-Id is dropped by the duplicate window).
    CHECK(test::stream_messages(nats.url(), "ORDERS") == kRows);
    CHECK(node.process->running());
}
