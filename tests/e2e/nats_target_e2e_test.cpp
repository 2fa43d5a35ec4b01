// NATS JetStream targets (README, "NATS JetStream targets") through a real outboxd node and a
// real nats-server: rows published and done on the PubAck, with the body and headers the
// README promises; a subject no stream is bound to makes dead letters; wrong credentials are a
// retried error shown on the target; the server killed mid-run and restarted loses no row, and
// a redelivery is dropped by the stream's duplicate window; the target's API.

#include <algorithm>
#include <csignal>
#include <map>
#include <set>
#include <thread>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "brokers.hpp"
#include "e2e_cluster.hpp"
#include "nats_keys.hpp"
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

json nats_body(const std::string& url, json extra = json::object()) {
    json body = {{"kind", "nats"},
                 {"namespace", "default"},
                 {"activity_types", {"order.paid", "order.shipped"}},
                 {"url", url},
                 {"subject", "orders.{activity_type}"},
                 {"max_in_flight", 256},
                 {"timeout_ms", 3000}};
    for (auto& [key, value] : extra.items()) body[key] = value;
    return body;
}

}  // namespace

TEST_CASE("rows published to a NATS JetStream target are done on the PubAck, with their headers",
          "[e2e][nats]") {
    constexpr int kRows = 2000;
    E2eCluster cluster{"nats-basic"};
    test::NatsServer nats{cluster.dir() + "/nats"};
    test::create_stream(nats.url(), "ORDERS", {"orders.>"});
    auto& node = cluster.start_node("node-1", test::target_env());
    put_connected(node, "orders", nats_body(nats.url()));
    test::stage_rows(cluster, kRows, "order.paid");
    test::stage_rows(cluster, 1, "order.shipped", "s");
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
    REQUIRE(E2eCluster::await(
        [&] { return !get_target(node, "orders")["last_success_at"].is_null(); }, 5s));
    // The alias sees HTTP targets only.
    CHECK(
        json::parse(http_call(node.port, "GET", "/v1/http-targets").body)["http_targets"].empty());
    CHECK(http_call(node.port, "GET", "/v1/http-targets/orders").status == 404);
    CHECK(json::parse(http_call(node.port, "GET", "/v1/targets").body)["targets"].size() == 1);
}

TEST_CASE(
    "a NATS target that lists no activity types takes every type, each limited type under its "
    "limit",
    "[e2e][nats]") {
    E2eCluster cluster{"nats-any"};
    test::NatsServer nats{cluster.dir() + "/nats"};
    test::create_stream(nats.url(), "ORDERS", {"orders.>"});
    auto& node = cluster.start_node("node-1", test::target_env());
    // One type of the namespace has a rate limit of its own: 20 a second, 1 at once.
    REQUIRE(http_call(node.port, "PUT", "/v1/namespaces/default",
                      R"({"activities":{"order.slow":{"rate_limit":{"per_second":20,"burst":1}}}})")
                .status == 200);
    auto body = nats_body(nats.url());
    body.erase("activity_types");
    put_connected(node, "everything", body);
    CHECK(get_target(node, "everything")["activity_types"] == json::array());
    test::stage_rows(cluster, 40, "order.slow", "slow");
    test::stage_rows(cluster, 500, "order.paid", "paid");
    test::stage_rows(cluster, 500, "invoice.issued", "invoice");
    // The unlimited types are not held behind the limited one.
    REQUIRE(E2eCluster::await(
        [&] { return cluster.count("status = 'done' AND activity_type <> 'order.slow'") == 1000; },
        30s));
    CHECK(cluster.count("status = 'done' AND activity_type = 'order.slow'") < 40);
    REQUIRE(E2eCluster::await([&] { return cluster.count("status = 'done'") == 1040; }, 30s));
    CHECK(test::stream_messages(nats.url(), "ORDERS") == 1040);
    // 40 rows at 20 a second from a bucket of 1: their publishes span some 2 s.
    const auto spread =
        cluster.db
            .exec(
                "SELECT extract(epoch FROM max(finished_at) - min(finished_at)) FROM outbox "
                "WHERE activity_type = 'order.slow'")[0][0]
            .as<double>();
    CHECK(spread >= 1.7);
}

TEST_CASE("a NATS subject no stream is bound to makes dead letters with the broker's words",
          "[e2e][nats]") {
    E2eCluster cluster{"nats-nostream"};
    test::NatsServer nats{cluster.dir() + "/nats"};
    test::create_stream(nats.url(), "ORDERS", {"orders.>"});
    auto& node = cluster.start_node("node-1", test::target_env());
    put_connected(node, "stray", nats_body(nats.url(), {{"subject", "nowhere.{activity_type}"}}));
    test::stage_rows(cluster, 5, "order.paid");
    REQUIRE(E2eCluster::await([&] { return cluster.count("status = 'failed'") == 5; }, 30s));
    CHECK(cluster.count("last_error LIKE '%no JetStream stream is bound to subject%'") == 5);
    CHECK(test::stream_messages(nats.url(), "ORDERS") == 0);
}

TEST_CASE("wrong NATS credentials are a retried error shown on the target, then fixed",
          "[e2e][nats]") {
    E2eCluster cluster{"nats-auth"};
    test::NatsServer nats{cluster.dir() + "/nats", {"app", "right", "", ""}};
    test::create_stream(nats.client_url(), "ORDERS", {"orders.>"});
    auto& node = cluster.start_node("node-1", test::target_env());
    auto body = nats_body(nats.url(), {{"user", "app"}, {"password", "wrong"}});
    REQUIRE(http_call(node.port, "PUT", "/v1/targets/orders", body.dump()).status == 200);
    test::stage_rows(cluster, 20, "order.paid");
    const auto shown = test::await_refused(node, "orders");
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

TEST_CASE("a NATS target logs in with an NKey: the public key and a seed file", "[e2e][nats]") {
    E2eCluster cluster{"nats-nkey"};
    const auto user = test::make_nkey('U');
    const auto stranger = test::make_nkey('U');  // a key pair the server does not know
    // The server knows the user's public key only, and an admin login for the test's helpers.
    test::NatsServer nats{cluster.dir() + "/nats",
                          {"admin", "admin-pass", "",
                           "authorization {\n  users = [\n    {user: \"admin\", password: "
                           "\"admin-pass\"},\n    {nkey: \"" +
                               user.public_key + "\"}\n  ]\n}\n"}};
    test::create_stream(nats.client_url(), "ORDERS", {"orders.>"});
    const auto seed_file = cluster.dir() + "/user.nk";
    const auto stranger_file = cluster.dir() + "/stranger.nk";
    test::write_secret_file(seed_file, user.seed + "\n");
    test::write_secret_file(stranger_file, stranger.seed + "\n");
    auto& node = cluster.start_node("node-1", test::target_env());

    // A seed that is not the key's: the server's nonce signed by another key is refused.
    auto body =
        nats_body(nats.url(), {{"nkey", stranger.public_key}, {"nkey_seed_file", stranger_file}});
    REQUIRE(http_call(node.port, "PUT", "/v1/targets/orders", body.dump()).status == 200);
    test::stage_rows(cluster, 50, "order.paid");
    test::await_refused(node, "orders");
    CHECK(cluster.count("status = 'pending' AND attempt = 0") == 50);

    body["nkey"] = user.public_key;
    body["nkey_seed_file"] = seed_file;
    REQUIRE(http_call(node.port, "PUT", "/v1/targets/orders", body.dump()).status == 200);
    REQUIRE(E2eCluster::await([&] { return cluster.count("status = 'done'") == 50; }, 30s));
    CHECK(test::stream_messages(nats.client_url(), "ORDERS") == 50);
    const auto shown = get_target(node, "orders");
    CHECK(shown["nkey"] == user.public_key);
    CHECK(shown["nkey_seed_file"] == seed_file);
    CHECK(shown.dump().find(user.seed) == std::string::npos);
    CHECK(node.process->log().find(user.seed) == std::string::npos);
    // The key and its seed file go together.
    body.erase("nkey");
    const auto half = http_call(node.port, "PUT", "/v1/targets/orders", body.dump());
    CHECK(half.status == 400);
    CHECK(half.body.find("nkey") != std::string::npos);
}

TEST_CASE("a NATS target logs in with a .creds file of an operator-mode server", "[e2e][nats]") {
    E2eCluster cluster{"nats-creds"};
    const auto setup = test::make_operator_setup();
    // Operator mode: every login is a user JWT of a trusted account; there is no other.
    test::NatsServer nats{cluster.dir() + "/nats", {"", "", "", setup.server_config}};
    const auto creds = cluster.dir() + "/app.creds";
    test::write_secret_file(creds, setup.creds);
    test::create_stream_as(nats.url(), creds, "ORDERS", {"orders.>"});
    auto& node = cluster.start_node("node-1", test::target_env());

    // Without credentials the server refuses the connection: why on the target, nothing
    // claimed.
    auto body = nats_body(nats.url());
    REQUIRE(http_call(node.port, "PUT", "/v1/targets/orders", body.dump()).status == 200);
    test::stage_rows(cluster, 200, "order.paid");
    test::await_refused(node, "orders");
    CHECK(cluster.count("status = 'pending' AND attempt = 0") == 200);

    body["creds_file"] = creds;
    REQUIRE(http_call(node.port, "PUT", "/v1/targets/orders", body.dump()).status == 200);
    REQUIRE(E2eCluster::await([&] { return cluster.count("status = 'done'") == 200; }, 30s));
    CHECK(test::stream_messages_as(nats.url(), creds, "ORDERS") == 200);
    const auto shown = get_target(node, "orders");
    CHECK(shown["creds_file"] == creds);
    CHECK(shown.dump().find(setup.user.seed) == std::string::npos);
    CHECK(node.process->log().find(setup.user.seed) == std::string::npos);
    // A file that is not there (on this node: another may hold it at that path) is the
    // connection's error, shown on the target; a relative path is refused.
    body["creds_file"] = cluster.dir() + "/missing.creds";
    REQUIRE(http_call(node.port, "PUT", "/v1/targets/orders", body.dump()).status == 200);
    test::await_refused(node, "orders");
    body["creds_file"] = "app.creds";
    const auto relative = http_call(node.port, "PUT", "/v1/targets/orders", body.dump());
    CHECK(relative.status == 400);
    CHECK(relative.body.find("creds_file must be an absolute path") != std::string::npos);
}

TEST_CASE(
    "a NATS server killed mid-run and restarted: every row done, none lost, none stored twice",
    "[e2e][nats]") {
    constexpr int kRows = 20000;
    E2eCluster cluster{"nats-kill"};
    test::NatsServer nats{cluster.dir() + "/nats"};
    test::create_stream(nats.url(), "ORDERS", {"orders.>"});
    auto& node = cluster.start_node("node-1", test::target_env());
    put_connected(node, "orders", nats_body(nats.url()));
    test::stage_rows(cluster, kRows, "order.paid");
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

TEST_CASE(
    "NATS: max_in_flight bounds unconfirmed messages across three nodes, and a node killed "
    "mid-run loses nothing and stores nothing twice",
    "[e2e][nats]") {
    constexpr int kRows = 30000;
    constexpr int kBound = 12;
    constexpr int kShare = kBound / 3;  // each of the three nodes', all owning 341 or 342 shards
    E2eCluster cluster{"nats-cluster"};
    test::NatsServer nats{cluster.dir() + "/nats"};
    test::create_stream(nats.url(), "ORDERS", {"orders.>"});
    const auto nodes = test::three_nodes_serving(
        cluster, test::target_env({{"OUTBOXD_LEASE_TTL_MS", "1500"}}), "orders",
        nats_body(nats.url(), {{"max_in_flight", kBound}}), kShare);
    auto& victim = *nodes[1];
    test::stage_rows(cluster, kRows, "order.paid");
    // Sampled while it runs: no node is ever past its share, so the cluster is never past the
    // bound.
    const int busiest = test::busiest_in_flight(cluster, "nats", "orders", kShare, kRows / 3);
    CHECK(busiest <= kBound);
    CHECK(busiest > 0);

    victim.process->signal(SIGKILL);
    REQUIRE(victim.process->wait(10s));
    REQUIRE(E2eCluster::await([&] { return cluster.count("status = 'done'") == kRows; }, 120s));
    CHECK(cluster.count("status <> 'done'") == 0);
    // The killed node's unconfirmed messages were published again by their new owner: the
    // stream's duplicate window dropped those it had stored.
    CHECK(test::stream_messages(nats.url(), "ORDERS") == kRows);
}

TEST_CASE("NATS: an ordered namespace's workflows reach the stream in order", "[e2e][nats]") {
    constexpr int kWorkflows = 40;
    constexpr int kSteps = 15;
    E2eCluster cluster{"nats-order"};
    test::NatsServer nats{cluster.dir() + "/nats"};
    test::create_stream(nats.url(), "ORDERS", {"orders.>"});
    auto& node = cluster.start_node("node-1", test::target_env());
    REQUIRE(http_call(node.port, "PUT", "/v1/namespaces/default", R"({"ordering":"workflow"})")
                .status == 200);
    put_connected(node, "orders", nats_body(nats.url()));
    cluster.db.exec(
        "INSERT INTO outbox (dispatch_key, workflow_id, ordinal, activity_type, input) "
        "SELECT 'w' || w || '-' || s, 'wf-' || w, s, 'order.paid', "
        "jsonb_build_object('w', w, 's', s) FROM generate_series(1, " +
        std::to_string(kWorkflows) + ") w, generate_series(1, " + std::to_string(kSteps) +
        ") s ORDER BY random()");
    REQUIRE(E2eCluster::await(
        [&] { return cluster.count("status = 'done'") == std::int64_t{kWorkflows} * kSteps; },
        60s));
    std::map<int, int> last_step;
    int out_of_order = 0;
    for (const auto& message : test::stream_contents(nats.url(), "ORDERS")) {
        const auto body = json::parse(message.data);
        auto& last = last_step[body["w"].get<int>()];
        if (body["s"].get<int>() != last + 1) ++out_of_order;
        last = body["s"].get<int>();
    }
    CHECK(out_of_order == 0);
    CHECK(last_step.size() == kWorkflows);
}

TEST_CASE("NATS targets: validated field by field, credentials never shown", "[e2e][nats]") {
    E2eCluster cluster{"nats-api"};
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
    const std::string url = "nats://127.0.0.1:4222";
    CHECK(field_of(put(nats_body("http://127.0.0.1:4222"))) == "url");
    CHECK(field_of(put(nats_body("nats://169.254.169.254:4222"))) == "url");
    CHECK(field_of(put(nats_body("nats://10.0.0.1:4222"))) == "url");
    CHECK(field_of(put(nats_body(url, {{"subject", nullptr}}))) == "subject");
    CHECK(field_of(put(nats_body(url, {{"subject", "orders.*"}}))) == "subject");
    CHECK(field_of(put(nats_body(url, {{"subject", "orders..x"}}))) == "subject");
    CHECK(field_of(put(nats_body(url, {{"subject", "orders.{customer}"}}))) == "subject");
    CHECK(field_of(put(nats_body(url, {{"body", "xml"}}))) == "body");
    CHECK(field_of(put(nats_body(url, {{"exchange", "x"}}))) == "exchange");
    CHECK(field_of(put(nats_body(url, {{"signing_secret", "s"}}))) == "signing_secret");
    CHECK(field_of(put(nats_body(url, {{"password", "p"}}))) == "password");
    CHECK(field_of(put(nats_body(url, {{"kind", "kafka"}}))) == "kind");
    CHECK(http_call(node.port, "PUT", "/v1/http-targets/t", nats_body(url).dump()).status == 400);
    CHECK(json::parse(http_call(node.port, "GET", "/v1/targets").body)["targets"].empty());

    // A password in the URL is taken out of it and kept as a secret; a PUT without it keeps it.
    auto body = nats_body("nats://app:hunter2@127.0.0.1:4222");
    REQUIRE(put(body).status == 200);
    auto shown = get_target(node, "t");
    CHECK(shown["url"] == "nats://127.0.0.1:4222");
    CHECK(shown["user"] == "app");
    CHECK(shown["credentials_set"] == json{"password"});
    CHECK(shown.dump().find("hunter2") == std::string::npos);
    body["url"] = url;
    body["user"] = "app";
    REQUIRE(put(body).status == 200);
    CHECK(get_target(node, "t")["credentials_set"] == json{"password"});
    CHECK(cluster.db.exec("SELECT credentials->>'password' FROM targets")[0][0].as<std::string>() ==
          "hunter2");  // in clear: this node has no OUTBOXD_SECRETS_KEY
    body["password"] = nullptr;
    body.erase("user");
    REQUIRE(put(body).status == 200);
    CHECK(get_target(node, "t")["credentials_set"].empty());
    // The alias does not replace another kind's target of the same name.
    CHECK(http_call(node.port, "PUT", "/v1/http-targets/t",
                    json({{"activity_types", {"x"}}, {"url", "http://127.0.0.1:1/"}}).dump())
              .status == 409);
    CHECK(http_call(node.port, "DELETE", "/v1/http-targets/t").status == 404);
    CHECK(http_call(node.port, "DELETE", "/v1/targets/t").status == 200);
}

TEST_CASE("a NATS target over TLS trusts its CA file, and only it", "[e2e][nats]") {
    E2eCluster cluster{"nats-tls"};
    const auto tls = test::make_test_certificates(cluster.dir());
    test::NatsServer nats{cluster.dir() + "/nats", {}, {tls.cert_file, tls.key_file}};
    auto& node = cluster.start_node("node-1", test::target_env());
    // The server's certificate names 127.0.0.1, signed by the test's CA: with it as the
    // target's ca_file the connection is made and verified. No stream is bound to the
    // subject: the row is a dead letter in JetStream's words, which came over that
    // connection.
    put_connected(node, "secure", nats_body(nats.url(), {{"ca_file", tls.ca_file}}));
    CHECK(get_target(node, "secure")["url"] == nats.url());
    test::stage_rows(cluster, 1, "order.paid", "tls");
    REQUIRE(E2eCluster::await([&] { return cluster.count("status = 'failed'") == 1; }, 30s));
    CHECK(cluster.count("last_error LIKE '%no JetStream stream is bound to subject%'") == 1);

    // Without it, the system's trust store does not know that CA: never connected, why on the
    // target, and no row claimed meanwhile.
    REQUIRE(http_call(node.port, "DELETE", "/v1/targets/secure").status == 200);
    REQUIRE(
        http_call(node.port, "PUT", "/v1/targets/untrusted", nats_body(nats.url()).dump()).status ==
        200);
    test::stage_rows(cluster, 3, "order.paid", "untrusted");
    test::await_refused(node, "untrusted");
    CHECK(cluster.count("status = 'pending' AND attempt = 0") == 3);
}

TEST_CASE("hostile target bodies: NUL, 1 MB strings, deep nesting, huge numbers change nothing",
          "[e2e][nats]") {
    E2eCluster cluster{"nats-hostile"};
    auto& node = cluster.start_node("node-1", test::target_env());
    const auto put = [&](const std::string& raw) {
        return http_call(node.port, "PUT", "/v1/targets/t", raw);
    };
    const std::string url = "nats://127.0.0.1:4222";
    const std::string mega(1 << 20, 'a');
    for (const auto& body : {
             nats_body(url, {{"subject", std::string{"orders.\0x", 9}}}),
             nats_body(url, {{"subject", "orders." + mega}}),
             nats_body("nats://" + mega + ":4222"),
             nats_body(url, {{"user", "app"}, {"password", std::string{"p\0w", 3}}}),
             nats_body(url, {{"user", "app"}, {"password", mega}}),
             nats_body(url, {{"token", mega}}),
             nats_body(url, {{"creds_file", std::string{"/etc/x\0y", 8}}}),
             nats_body(url, {{"max_in_flight", 1e300}}),
             nats_body(url, {{"timeout_ms", 99999999999LL}}),
             json({{"kind", "amqp"},
                   {"activity_types", {"x"}},
                   {"exchange", mega},
                   {"url", "amqp://127.0.0.1:5672/%2f"}}),
             json({{"kind", "amqp"},
                   {"activity_types", {"x"}},
                   {"exchange", "e"},
                   {"url", "amqp://127.0.0.1:5672/" + mega}}),
         }) {
        const auto answer = put(body.dump());
        INFO(answer.body.substr(0, 300));
        CHECK(answer.status == 400);
    }
    std::string deep(10000, '[');
    deep += std::string(10000, ']');
    CHECK(put(R"({"kind":"nats","subject":)" + deep + "}").status == 400);
    CHECK(put("{\"kind\":\"nats\",\"subject\":\"\xff\xfe\"}").status == 400);  // not UTF-8
    CHECK(json::parse(http_call(node.port, "GET", "/v1/targets").body)["targets"].empty());
    CHECK(node.process->running());
}
