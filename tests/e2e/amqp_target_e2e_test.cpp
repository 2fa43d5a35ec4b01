// AMQP targets (kind "amqp") through a real outboxd node and a real rabbitmq-server: rows
// published as persistent messages and done on the publisher confirm, with the body, message-id
// and headers the README promises; an unroutable message and a missing exchange make dead
// letters; wrong credentials are an error shown on the target while no row is claimed; the
// broker killed mid-run and restarted loses no row; an ordered namespace's messages reach the
// queue in each workflow's order; max_in_flight holds across three nodes, and a node killed
// mid-run loses nothing; amqps:// with the target's CA file; the target's API. A broker starts in
// some 8 s: each case that needs one starts its own, and the cases are few.

#include <algorithm>
#include <csignal>
#include <cstdint>
#include <map>
#include <set>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "brokers.hpp"
#include "e2e_cluster.hpp"
#include "target_e2e.hpp"
#include "tls_files.hpp"

using namespace outboxd;
using namespace std::chrono_literals;
using nlohmann::json;
using test::E2eCluster;
using test::get_target;
using test::http_call;
using test::put_connected;

namespace {

json amqp_body(const std::string& url, json extra = json::object()) {
    json body = {{"kind", "amqp"},
                 {"namespace", "default"},
                 {"activity_types", {"order.paid", "order.shipped"}},
                 {"url", url},
                 {"exchange", "orders"},
                 {"max_in_flight", 256},
                 {"timeout_ms", 5000}};
    for (auto& [key, value] : extra.items()) body[key] = value;
    return body;
}

// A topic exchange "orders" whose queue "orders-q" takes every "order.*" key.
void declare_orders(const test::RabbitMq& rabbit) {
    test::declare_exchange(rabbit.url(), "orders", "topic");
    test::declare_queue_bound(rabbit.url(), "orders-q", "orders", "order.*");
}

}  // namespace

TEST_CASE(
    "rows published to an AMQP target are done on the confirm, with their properties, "
    "in each workflow's order",
    "[e2e][amqp]") {
    constexpr int kRows = 2000;
    E2eCluster cluster{"amqp-basic"};
    test::RabbitMq rabbit{cluster.dir() + "/rabbit"};
    declare_orders(rabbit);
    auto& node = cluster.start_node("node-1", test::target_env());
    put_connected(node, "orders", amqp_body(rabbit.url()));
    test::stage_rows(cluster, kRows, "order.paid");
    test::stage_rows(cluster, 1, "order.shipped", "s");
    REQUIRE(E2eCluster::await([&] { return cluster.count("status = 'done'") == kRows + 1; }, 60s));
    CHECK(test::queue_messages(rabbit.url(), "orders-q") == kRows + 1);

    const auto stored = test::drain_queue(rabbit.url(), "orders-q");
    std::set<std::string> ids;
    for (const auto& message : stored) ids.insert(message.message_id);
    CHECK(ids.size() == kRows + 1);
    const auto shipped = std::find_if(stored.begin(), stored.end(),
                                      [](const auto& m) { return m.message_id == "s-1"; });
    REQUIRE(shipped != stored.end());
    // The body is the row's input as is; the routing key the default template's; the task's
    // fields are headers.
    CHECK(json::parse(shipped->data) == json{{"n", 1}});
    CHECK(shipped->subject == "order.shipped");
    CHECK(shipped->delivery_mode == 2);
    CHECK(shipped->headers.at("Outboxd-Dispatch-Key") == "s-1");
    CHECK(shipped->headers.at("Outboxd-Workflow-Id") == "order-1");
    CHECK(shipped->headers.at("Outboxd-Activity-Type") == "order.shipped");
    CHECK(shipped->headers.at("Outboxd-Namespace") == "default");
    CHECK(shipped->headers.at("Outboxd-Database") == "default");
    CHECK(shipped->headers.at("Outboxd-Attempt") == "1");
    CHECK(shipped->headers.at("Outboxd-Delivery") == "1");

    // The URL's user info went to the settings: the URL shown holds no password.
    const auto shown = get_target(node, "orders");
    INFO(shown.dump());
    CHECK(shown["kind"] == "amqp");
    CHECK(shown["url"] == "amqp://127.0.0.1:" + std::to_string(rabbit.port()) + "/%2f");
    CHECK(shown["user"] == "guest");
    CHECK(shown["exchange"] == "orders");
    CHECK(shown["routing_key"] == "{activity_type}");
    CHECK(shown["body"] == "input");
    CHECK(shown["credentials_set"] == json{"password"});
    CHECK(!shown.contains("password"));
    CHECK(shown.dump().find(":guest@") == std::string::npos);
    CHECK(shown["node"]["connected"] == true);
    REQUIRE(E2eCluster::await(
        [&] { return !get_target(node, "orders")["last_success_at"].is_null(); }, 5s));

    // An ordered namespace (its own target and queue, on the same broker): each workflow's
    // messages reach the queue in ordinal order, each published once its predecessor was
    // confirmed.
    constexpr int kWorkflows = 20;
    constexpr int kOrdinals = 10;
    constexpr std::int64_t kOrdered = std::int64_t{kWorkflows} * kOrdinals;
    test::declare_queue_bound(rabbit.url(), "ordered-q", "orders", "ordered.#");
    REQUIRE(http_call(node.port, "PUT", "/v1/namespaces/ordered", R"({"ordering":"workflow"})")
                .status == 200);
    put_connected(node, "ordered",
                  amqp_body(rabbit.url(), {{"namespace", "ordered"},
                                           {"routing_key", "ordered.{activity_type}"}}));
    // Staged newest ordinal first, so that the id order is no help.
    cluster.db.exec(
        "INSERT INTO outbox (workflow_id, ordinal, namespace, activity_type, input) "
        "SELECT 'wf-' || w, o, 'ordered', 'order.paid', jsonb_build_object('w', w, 'o', o) "
        "FROM generate_series(1, " +
        std::to_string(kWorkflows) + ") w, generate_series(" + std::to_string(kOrdinals - 1) +
        ", 0, -1) o");
    REQUIRE(E2eCluster::await(
        [&] { return cluster.count("namespace = 'ordered' AND status = 'done'") == kOrdered; },
        60s));
    std::map<int, std::vector<int>> order;  // workflow → ordinals, in queue order
    for (const auto& message : test::drain_queue(rabbit.url(), "ordered-q")) {
        const auto input = json::parse(message.data);
        order[input["w"].get<int>()].push_back(input["o"].get<int>());
    }
    REQUIRE(order.size() == kWorkflows);
    for (const auto& [workflow, ordinals] : order) {
        INFO("workflow wf-" << workflow);
        CHECK(ordinals.size() == kOrdinals);
        CHECK(std::is_sorted(ordinals.begin(), ordinals.end()));
    }
}

TEST_CASE("an unroutable AMQP message and a missing exchange make dead letters", "[e2e][amqp]") {
    E2eCluster cluster{"amqp-dead"};
    test::RabbitMq rabbit{cluster.dir() + "/rabbit"};
    declare_orders(rabbit);
    auto& node = cluster.start_node("node-1", test::target_env());
    // The exchange exists, but no queue is bound for "lost.*" keys.
    put_connected(node, "stray",
                  amqp_body(rabbit.url(), {{"activity_types", {"order.lost"}},
                                           {"routing_key", "lost.{activity_type}"}}));
    put_connected(node, "ghost",
                  amqp_body(rabbit.url(), {{"activity_types", {"order.ghost"}},
                                           {"exchange", "ghost-{activity_type}"}}));
    test::stage_rows(cluster, 5, "order.lost", "lost");
    test::stage_rows(cluster, 5, "order.ghost", "ghost");
    REQUIRE(E2eCluster::await([&] { return cluster.count("status = 'failed'") == 10; }, 30s));
    CHECK(cluster.count("dispatch_key LIKE 'lost-%' AND last_error LIKE '%312 NO_ROUTE%'") == 5);
    CHECK(cluster.count("dispatch_key LIKE 'ghost-%' AND last_error LIKE "
                        "'%no exchange ''ghost-order.ghost'' in vhost ''/''%'") == 5);
    CHECK(cluster.count("attempt > 1") == 0);  // dead at once, not retried
    CHECK(test::queue_messages(rabbit.url(), "orders-q") == 0);
    // The failed passive declares did not cost the connection.
    CHECK(get_target(node, "ghost")["node"]["connected"] == true);
}

TEST_CASE("a wrong AMQP password is an error shown on the target, then fixed", "[e2e][amqp]") {
    const std::string wrong = "wrong-secret-4711";
    E2eCluster cluster{"amqp-auth"};
    test::RabbitMq rabbit{cluster.dir() + "/rabbit"};
    declare_orders(rabbit);
    auto& node = cluster.start_node("node-1", test::target_env());
    const auto url = "amqp://127.0.0.1:" + std::to_string(rabbit.port()) + "/%2f";
    auto body = amqp_body(url, {{"user", "guest"}, {"password", wrong}});
    REQUIRE(http_call(node.port, "PUT", "/v1/targets/orders", body.dump()).status == 200);
    test::stage_rows(cluster, 20, "order.paid");
    const auto shown = test::await_refused(node, "orders");
    INFO(shown.dump());
    CHECK(shown["node"]["last_error"].get<std::string>().find("ACCESS_REFUSED") !=
          std::string::npos);
    CHECK(shown.dump().find(wrong) == std::string::npos);  // never shown
    CHECK(shown["credentials_set"] == json{"password"});
    // Nothing was claimed for a target that cannot take it: no attempt spent.
    CHECK(cluster.count("status = 'pending' AND attempt = 0") == 20);
    body["password"] = "guest";
    REQUIRE(http_call(node.port, "PUT", "/v1/targets/orders", body.dump()).status == 200);
    REQUIRE(E2eCluster::await([&] { return cluster.count("status = 'done'") == 20; }, 30s));
    CHECK(test::queue_messages(rabbit.url(), "orders-q") == 20);
}

TEST_CASE("an AMQP target over TLS (amqps://) trusts its CA file, and only it", "[e2e][amqp]") {
    E2eCluster cluster{"amqp-tls"};
    const auto tls = test::make_test_certificates(cluster.dir());
    test::RabbitMq rabbit{cluster.dir() + "/rabbit", {0, tls.cert_file, tls.key_file, tls.ca_file}};
    declare_orders(rabbit);
    auto& node = cluster.start_node("node-1", test::target_env());
    // The broker's certificate names 127.0.0.1, signed by the test's CA: with that CA as the
    // target's ca_file the connection is made, verified and carries the confirms.
    put_connected(node, "secure", amqp_body(rabbit.tls_url(), {{"ca_file", tls.ca_file}}));
    CHECK(get_target(node, "secure")["url"].get<std::string>().rfind("amqps://", 0) == 0);
    test::stage_rows(cluster, 300, "order.paid", "tls");
    REQUIRE(E2eCluster::await([&] { return cluster.count("status = 'done'") == 300; }, 30s));
    CHECK(test::queue_messages(rabbit.url(), "orders-q") == 300);

    // Without it, the system's trust store does not know that CA: never connected, why on the
    // target, no row claimed.
    REQUIRE(http_call(node.port, "DELETE", "/v1/targets/secure").status == 200);
    REQUIRE(http_call(node.port, "PUT", "/v1/targets/untrusted", amqp_body(rabbit.tls_url()).dump())
                .status == 200);
    test::stage_rows(cluster, 3, "order.paid", "untrusted");
    test::await_refused(node, "untrusted");
    CHECK(cluster.count("status = 'pending' AND attempt = 0") == 3);
    // A CA file is for TLS only.
    const auto plain = http_call(node.port, "PUT", "/v1/targets/plain",
                                 amqp_body(rabbit.url(), {{"ca_file", tls.ca_file}}).dump());
    CHECK(plain.status == 400);
    CHECK(plain.body.find("ca_file needs an amqps:// url") != std::string::npos);
}

TEST_CASE("an AMQP broker killed mid-run and restarted: every row done, none lost", "[e2e][amqp]") {
    constexpr int kRows = 5000;
    E2eCluster cluster{"amqp-kill"};
    test::RabbitMq rabbit{cluster.dir() + "/rabbit"};
    declare_orders(rabbit);
    auto& node = cluster.start_node("node-1", test::target_env());
    put_connected(node, "orders", amqp_body(rabbit.url()));
    test::stage_rows(cluster, kRows, "order.paid");
    REQUIRE(E2eCluster::await([&] { return cluster.count("status = 'done'") > kRows / 10; }, 60s));
    rabbit.kill();
    CHECK(cluster.count("status = 'done'") < kRows);  // killed mid-run
    // The node sees the connection go: it takes nothing more meanwhile.
    REQUIRE(E2eCluster::await(
        [&] { return get_target(node, "orders")["node"]["connected"] == false; }, 10s));
    rabbit.restart();
    REQUIRE(E2eCluster::await([&] { return cluster.count("status = 'done'") == kRows; }, 120s));
    CHECK(cluster.count("status <> 'done'") == 0);
    // A confirmed message was on disk: all survive the kill. A message whose confirm the kill
    // took is published again, under the same message-id.
    const auto stored = test::drain_queue(rabbit.url(), "orders-q");
    std::set<std::string> ids;
    for (const auto& message : stored) ids.insert(message.message_id);
    CHECK(stored.size() >= static_cast<std::size_t>(kRows));
    CHECK(ids.size() == static_cast<std::size_t>(kRows));
    CHECK(node.process->running());
}

TEST_CASE(
    "AMQP: max_in_flight bounds unconfirmed messages across three nodes, and a node killed "
    "mid-run loses nothing",
    "[e2e][amqp]") {
    constexpr int kRows = 6000;
    constexpr int kBound = 12;
    constexpr int kShare = kBound / 3;  // each of the three nodes', all owning 341 or 342 shards
    E2eCluster cluster{"amqp-cluster"};
    test::RabbitMq rabbit{cluster.dir() + "/rabbit"};
    declare_orders(rabbit);
    const auto nodes = test::three_nodes_serving(
        cluster, test::target_env({{"OUTBOXD_LEASE_TTL_MS", "1500"}}), "orders",
        amqp_body(rabbit.url(), {{"max_in_flight", kBound}}), kShare);
    auto& victim = *nodes[1];
    test::stage_rows(cluster, kRows, "order.paid");
    // Sampled while it runs: no node is ever past its share, so the cluster is never past the
    // bound.
    const int busiest = test::busiest_in_flight(cluster, "amqp", "orders", kShare, kRows / 3);
    CHECK(busiest <= kBound);
    CHECK(busiest > 0);

    victim.process->signal(SIGKILL);
    REQUIRE(victim.process->wait(10s));
    // What it held: published and not yet confirmed, or confirmed and not yet written done.
    const auto stranded = cluster.count("status = 'claimed' AND claimed_by LIKE 'node-2/%'");
    REQUIRE(E2eCluster::await([&] { return cluster.count("status = 'done'") == kRows; }, 120s));
    CHECK(cluster.count("status <> 'done'") == 0);
    // Those rows were published again by their new owner, under the same message-id: every
    // row is in the queue, and only those may be there twice.
    const auto stored = test::drain_queue(rabbit.url(), "orders-q");
    std::set<std::string> ids;
    for (const auto& message : stored) ids.insert(message.message_id);
    CHECK(ids.size() == static_cast<std::size_t>(kRows));
    CHECK(static_cast<std::int64_t>(stored.size() - ids.size()) <= stranded);
}

TEST_CASE("AMQP targets: validated field by field, credentials never shown", "[e2e][amqp]") {
    E2eCluster cluster{"amqp-api"};
    auto& node = cluster.start_node("node-1", test::target_env());
    const auto put = [&](const json& body) {
        return http_call(node.port, "PUT", "/v1/targets/t", body.dump());
    };
    const auto field_of = [](const test::HttpResult& result) {
        INFO(result.body);
        CHECK(result.status == 400);
        const auto body = json::parse(result.body);
        return body["error"].contains("field") ? body["error"]["field"].get<std::string>() : "";
    };
    const std::string url = "amqp://127.0.0.1:5672/%2f";
    CHECK(field_of(put(amqp_body("http://127.0.0.1:5672/"))) == "url");
    CHECK(field_of(put(amqp_body("amqp://10.0.0.1:5672/"))) == "url");
    CHECK(field_of(put(amqp_body("amqp://127.0.0.1:5672/a/b"))) == "url");
    CHECK(field_of(put(amqp_body("amqp://127.0.0.1:5672/%2f?heartbeat=5"))) == "url");
    CHECK(field_of(put(amqp_body(url, {{"exchange", nullptr}}))) == "exchange");
    CHECK(field_of(put(amqp_body(url, {{"exchange", ""}}))) == "exchange");
    CHECK(field_of(put(amqp_body(url, {{"exchange", "orders events"}}))) == "exchange");
    CHECK(field_of(put(amqp_body(url, {{"exchange", std::string(256, 'x')}}))) == "exchange");
    CHECK(field_of(put(amqp_body(url, {{"exchange", "orders.{customer}"}}))) == "exchange");
    CHECK(field_of(put(amqp_body(url, {{"routing_key", "{activity_type"}}))) == "routing_key");
    CHECK(field_of(put(amqp_body(url, {{"routing_key", std::string(256, 'k')}}))) == "routing_key");
    CHECK(field_of(put(amqp_body(url, {{"body", "xml"}}))) == "body");
    CHECK(field_of(put(amqp_body(url, {{"subject", "x"}}))) == "subject");
    CHECK(field_of(put(amqp_body(url, {{"headers", {{"X-A", "b"}}}}))) == "headers");
    CHECK(field_of(put(amqp_body(url, {{"password", "p"}}))) == "password");
    CHECK(field_of(put(amqp_body(url, {{"ca_file", "/etc/ssl/certs/ca-certificates.crt"}}))) ==
          "ca_file");
    CHECK(field_of(put(amqp_body("amqps://127.0.0.1/", {{"ca_file", "relative.pem"}}))) ==
          "ca_file");
    CHECK(json::parse(http_call(node.port, "GET", "/v1/targets").body)["targets"].empty());

    // A password in the URL is taken out of it and kept as a secret; a PUT without it keeps
    // it. The routing key left out is stored as its default.
    auto body = amqp_body("amqp://app:hunter2@127.0.0.1/billing");
    REQUIRE(put(body).status == 200);
    auto shown = get_target(node, "t");
    INFO(shown.dump());
    CHECK(shown["url"] == "amqp://127.0.0.1:5672/billing");
    CHECK(shown["user"] == "app");
    CHECK(shown["routing_key"] == "{activity_type}");
    CHECK(shown["credentials_set"] == json{"password"});
    CHECK(shown.dump().find("hunter2") == std::string::npos);
    body["url"] = "amqp://127.0.0.1/billing";
    body["user"] = "app";
    REQUIRE(put(body).status == 200);
    CHECK(get_target(node, "t")["credentials_set"] == json{"password"});
    body["password"] = nullptr;
    body.erase("user");
    REQUIRE(put(body).status == 200);
    CHECK(get_target(node, "t")["credentials_set"].empty());
    CHECK(http_call(node.port, "GET", "/v1/http-targets/t").status == 404);
    CHECK(http_call(node.port, "DELETE", "/v1/targets/t").status == 200);
}
