// Access control on a real node (README, "Security"): for each role and route, allowed, 401,
// 403, and another tenant's row answered as missing; the worker socket's hello scope and
// revocation; tenants' tasks never crossing under a mixed load; the audit log; and no
// secret in any log line, audit row, metric or API answer.

#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "e2e_cluster.hpp"
#include "jwt_test_keys.hpp"

using namespace outboxd;
using namespace std::chrono_literals;
using nlohmann::json;
using test::E2eCluster;
using test::http_call;

namespace {

constexpr const char* kAdmin = "bootstrap-admin-secret";

struct Credential {
    std::string id;
    std::string secret;
};

Credential create(std::uint16_t port, const json& body) {
    const auto made = http_call(port, "POST", "/v1/credentials", body.dump(), std::string{kAdmin});
    INFO(made.body);
    REQUIRE(made.status == 201);
    const auto answer = json::parse(made.body);
    return {answer["id"].get<std::string>(), answer["secret"].get<std::string>()};
}

json error_of(const test::HttpResult& result) { return json::parse(result.body)["error"]; }

// One row each in billing and orders (workflow "<ns>-wf"), plus a dead letter each.
void stage_tenants(std::uint16_t port) {
    const auto staged = http_call(port, "POST", "/v1/outbox", R"({"rows":[
        {"workflow_id":"billing-wf","ordinal":0,"activity_type":"charge","namespace":"billing",
         "input":{"card":"4111-billing"},"visible_after":"2099-01-01T00:00:00Z"},
        {"workflow_id":"orders-wf","ordinal":0,"activity_type":"ship","namespace":"orders",
         "input":{"address":"orders-secret-address"},"visible_after":"2099-01-01T00:00:00Z"},
        {"workflow_id":"billing-dead","ordinal":0,"activity_type":"charge","namespace":"billing",
         "visible_after":"2099-01-01T00:00:00Z"},
        {"workflow_id":"orders-dead","ordinal":0,"activity_type":"ship","namespace":"orders",
         "visible_after":"2099-01-01T00:00:00Z"}]})",
                                  std::string{kAdmin});
    REQUIRE(staged.status == 200);
}

}  // namespace

TEST_CASE("each role reaches its routes and namespaces, and nothing else", "[e2e][access]") {
    E2eCluster cluster{"access_roles"};
    auto& node = cluster.start_node("node-1", {{"OUTBOXD_ADMIN_TOKEN", kAdmin}});
    const auto port = node.port;
    stage_tenants(port);
    cluster.db.exec(
        "UPDATE outbox SET status = 'failed', finished_at = now(), last_error = 'boom' "
        "WHERE workflow_id IN ('billing-dead', 'orders-dead')");

    const auto worker =
        create(port, {{"name", "bw"}, {"namespaces", {"billing"}}, {"roles", {"worker"}}});
    const auto producer =
        create(port, {{"name", "bp"}, {"namespaces", {"billing"}}, {"roles", {"producer"}}});
    const auto reader =
        create(port, {{"name", "br"}, {"namespaces", {"billing"}}, {"roles", {"reader"}}});
    const auto payloads = create(
        port,
        {{"name", "brp"}, {"namespaces", {"billing"}}, {"roles", {"reader", "read_payloads"}}});
    const auto op =
        create(port, {{"name", "bo"}, {"namespaces", {"billing"}}, {"roles", {"operator"}}});
    const auto admin = create(port, {{"name", "all"}, {"namespaces", {"*"}}, {"roles", {"admin"}}});

    // Who calls → expected status, for each route.
    struct Case {
        std::string method;
        std::string target;
        std::string body;
        std::map<std::string, int> expect;  // by caller; callers not named: 403
    };
    const std::string billing_row =
        R"({"rows":[{"workflow_id":"p","ordinal":0,"activity_type":"a","namespace":"billing"}]})";
    const std::string orders_row =
        R"({"rows":[{"workflow_id":"q","ordinal":0,"activity_type":"a","namespace":"orders"}]})";
    const std::vector<Case> cases = {
        {"GET",
         "/v1/cluster",
         "",
         {{"worker", 200}, {"reader", 200}, {"payloads", 200}, {"operator", 200}, {"admin", 200}}},
        {"GET",
         "/v1/whoami",
         "",
         {{"worker", 200},
          {"producer", 200},
          {"reader", 200},
          {"payloads", 200},
          {"operator", 200},
          {"admin", 200}}},
        {"POST", "/v1/outbox", billing_row, {{"producer", 200}, {"admin", 200}}},
        {"POST", "/v1/outbox", orders_row, {{"admin", 200}}},
        {"GET",
         "/v1/outbox/billing-wf:0",
         "",
         {{"reader", 200}, {"payloads", 200}, {"operator", 200}, {"admin", 200}}},
        // Another tenant's row: as missing as one that never was.
        {"GET",
         "/v1/outbox/orders-wf:0",
         "",
         {{"reader", 404}, {"payloads", 404}, {"operator", 404}, {"admin", 200}}},
        {"GET",
         "/v1/outbox/never-staged",
         "",
         {{"reader", 404}, {"payloads", 404}, {"operator", 404}, {"admin", 404}}},
        {"GET",
         "/v1/workflows/billing-wf",
         "",
         {{"reader", 200}, {"payloads", 200}, {"operator", 200}, {"admin", 200}}},
        {"GET",
         "/v1/dead-letters",
         "",
         {{"reader", 200}, {"payloads", 200}, {"operator", 200}, {"admin", 200}}},
        {"GET", "/v1/dead-letters?namespace=orders", "", {{"admin", 200}}},
        {"POST", "/v1/dead-letters/orders-dead:0/requeue", "", {{"operator", 404}, {"admin", 200}}},
        {"POST", "/v1/dead-letters/purge", R"({"namespace":"orders"})", {{"admin", 200}}},
        {"POST", "/v1/workflows/billing-wf/pause", "", {{"operator", 200}, {"admin", 200}}},
        {"POST", "/v1/workflows/orders-wf/pause", "", {{"operator", 404}, {"admin", 200}}},
        {"GET",
         "/v1/namespaces",
         "",
         {{"reader", 200}, {"payloads", 200}, {"operator", 200}, {"admin", 200}}},
        {"GET",
         "/v1/namespaces/billing",
         "",
         {{"reader", 200}, {"payloads", 200}, {"operator", 200}, {"admin", 200}}},
        {"PUT", "/v1/namespaces/billing", R"({"weight":2})", {{"operator", 200}, {"admin", 200}}},
        {"PUT", "/v1/namespaces/orders", R"({"weight":2})", {{"admin", 200}}},
        {"PUT",
         "/v1/schedules/tick",
         R"({"cron":"0 0 1 1 *","namespace":"billing","activity_type":"tick"})",
         {{"operator", 200}, {"admin", 200}}},
        {"PUT",
         "/v1/schedules/other-tick",
         R"({"cron":"0 0 1 1 *","namespace":"orders","activity_type":"tick"})",
         {{"admin", 200}}},
        {"GET",
         "/v1/schedules/other-tick",
         "",
         {{"reader", 404}, {"payloads", 404}, {"operator", 404}, {"admin", 200}}},
        {"DELETE", "/v1/schedules/other-tick", "", {{"operator", 404}, {"admin", 200}}},
        {"GET", "/v1/credentials", "", {{"admin", 200}}},
        {"GET", "/v1/audit", "", {{"admin", 200}}},
    };
    const std::map<std::string, std::optional<std::string>> callers = {
        {"none", std::nullopt},    {"bad", std::string{"obx_not-a-credential"}},
        {"worker", worker.secret}, {"producer", producer.secret},
        {"reader", reader.secret}, {"payloads", payloads.secret},
        {"operator", op.secret},   {"admin", admin.secret}};
    for (const auto& c : cases) {
        for (const auto& [who, bearer] : callers) {
            const auto expected = who == "none" || who == "bad"
                                      ? 401
                                      : (c.expect.contains(who) ? c.expect.at(who) : 403);
            const auto result = http_call(port, c.method, c.target, c.body, bearer);
            INFO(who << ": " << c.method << " " << c.target << " -> " << result.status << " "
                     << result.body);
            CHECK(result.status == expected);
            if (expected == 403) {
                CHECK(error_of(result)["code"] == "forbidden");
                CHECK_FALSE(error_of(result)["scope"].get<std::string>().empty());
            }
            // A refusal never holds another tenant's data.
            if (result.status >= 400) {
                CHECK(result.body.find("orders-secret-address") == std::string::npos);
            }
        }
    }

    SECTION("payloads show only with read_payloads, listings only the caller's namespaces") {
        const auto hidden =
            json::parse(http_call(port, "GET", "/v1/outbox/billing-wf:0", {}, reader.secret).body);
        CHECK(hidden["input"].is_null());
        CHECK(hidden["payloads_hidden"] == true);
        const auto shown = json::parse(
            http_call(port, "GET", "/v1/outbox/billing-wf:0", {}, payloads.secret).body);
        CHECK(shown["input"] == json{{"card", "4111-billing"}});
        const auto listed =
            json::parse(http_call(port, "GET", "/v1/namespaces", {}, reader.secret).body);
        for (const auto& ns : listed["namespaces"]) CHECK(ns["namespace"] == "billing");
        const auto letters =
            json::parse(http_call(port, "GET", "/v1/dead-letters", {}, reader.secret).body);
        for (const auto& letter : letters["dead_letters"]) CHECK(letter["namespace"] == "billing");
        const auto workflow =
            json::parse(http_call(port, "GET", "/v1/workflows/orders-wf", {}, reader.secret).body);
        CHECK(workflow["rows"].empty());
    }

    SECTION("a bulk requeue or purge of an operator touches its namespaces only") {
        cluster.db.exec(
            "UPDATE outbox SET status = 'failed', finished_at = now(), last_error = 'boom' "
            "WHERE workflow_id IN ('billing-dead', 'orders-dead')");
        const auto purged = http_call(port, "POST", "/v1/dead-letters/purge", "{}", op.secret);
        REQUIRE(purged.status == 200);
        CHECK(json::parse(purged.body)["purged"] == 1);
        CHECK(cluster.count("workflow_id = 'billing-dead'") == 0);
        CHECK(cluster.count("workflow_id = 'orders-dead' AND status = 'failed'") == 1);
    }

    SECTION("an expired or deleted credential is refused") {
        const auto deleted =
            http_call(port, "DELETE", "/v1/credentials/" + reader.id, {}, std::string{kAdmin});
        REQUIRE(deleted.status == 200);
        CHECK(http_call(port, "GET", "/v1/namespaces", {}, reader.secret).status == 401);
        cluster.db.exec(
            "UPDATE credentials SET expires_at = now() - interval '1 second' WHERE id = '" + op.id +
            "'");
        CHECK(E2eCluster::await(
            [&] { return http_call(port, "GET", "/v1/namespaces", {}, op.secret).status == 401; },
            10s));
        const auto refused = http_call(port, "GET", "/v1/namespaces", {}, op.secret);
        CHECK_THAT(error_of(refused)["message"].get<std::string>(), Catch::Contains("expired"));
    }
}

TEST_CASE("credentials: bad bodies are named, secrets are shown once, an open node refuses them",
          "[e2e][access]") {
    E2eCluster cluster{"access_credentials"};
    auto& open = cluster.start_node("open-node");
    const auto on_open = http_call(open.port, "POST", "/v1/credentials",
                                   R"({"name":"x","namespaces":["a"],"roles":["worker"]})");
    CHECK(on_open.status == 409);
    CHECK(error_of(on_open)["code"] == "node_open");

    auto& node = cluster.start_node("node-1", {{"OUTBOXD_ADMIN_TOKEN", kAdmin}});
    for (
        const auto& [body, field] : std::vector<std::pair<std::string, std::string>>{
            {R"({"namespaces":["a"],"roles":["worker"]})", "name"},
            {R"({"name":"has space","namespaces":["a"],"roles":["worker"]})", "name"},
            {R"({"name":"x","namespaces":[],"roles":["worker"]})", "namespaces"},
            {R"({"name":"x","namespaces":["a"],"roles":["root"]})", "roles"},
            {R"({"name":"x","namespaces":["a"],"roles":["worker"],"expires_at":"2001-01-01T00:00:00Z"})",
             "expires_at"},
            {R"({"name":"x","namespaces":["a"],"roles":["worker"],"color":"red"})", "color"}}) {
        const auto refused =
            http_call(node.port, "POST", "/v1/credentials", body, std::string{kAdmin});
        INFO(body << " -> " << refused.body);
        CHECK(refused.status == 400);
        CHECK(error_of(refused)["field"] == field);
    }
    CHECK(cluster.count("true") == 0);

    const auto made = create(node.port, {{"name", "billing-workers"},
                                         {"namespaces", {"billing"}},
                                         {"roles", {"worker"}},
                                         {"expires_at", "2099-01-01T00:00:00Z"}});
    CHECK(made.secret.starts_with("obx_"));
    const auto shown =
        http_call(node.port, "GET", "/v1/credentials/" + made.id, {}, std::string{kAdmin});
    REQUIRE(shown.status == 200);
    CHECK(shown.body.find(made.secret) == std::string::npos);
    CHECK(json::parse(shown.body)["roles"] == json{"worker"});
    const auto stored =
        cluster.db.exec("SELECT secret_sha256 FROM credentials")[0][0].as<std::string>();
    CHECK(stored.size() == 64);
    CHECK(stored.find(made.secret) == std::string::npos);
    CHECK(http_call(node.port, "GET", "/v1/credentials/cred_missing", {}, std::string{kAdmin})
              .status == 404);
}

TEST_CASE("the worker socket: hello only for the credential's namespaces; revocation closes it",
          "[e2e][access]") {
    E2eCluster cluster{"access_socket"};
    auto& node = cluster.start_node(
        "node-1", {{"OUTBOXD_ADMIN_TOKEN", kAdmin}, {"OUTBOXD_QUOTA_CACHE_TTL_MS", "300"}});
    const auto worker =
        create(node.port, {{"name", "bw"}, {"namespaces", {"billing"}}, {"roles", {"worker"}}});
    const auto reader =
        create(node.port, {{"name", "br"}, {"namespaces", {"billing"}}, {"roles", {"reader"}}});
    const auto pinned = create(node.port, {{"name", "pinned"},
                                           {"namespaces", {"billing"}},
                                           {"roles", {"worker"}},
                                           {"nodes", {"eu-1"}}});

    CHECK_THROWS_WITH(test::WsClient(node.port, "/v1/workers"), Catch::Contains("401"));
    CHECK_THROWS_WITH(test::WsClient(node.port, "/v1/workers", std::string{"obx_wrong"}),
                      Catch::Contains("401"));
    CHECK_THROWS_WITH(test::WsClient(node.port, "/v1/workers", reader.secret),
                      Catch::Contains("403"));

    const auto hello = [](const std::string& namespaces, const std::string& node_label) {
        return R"({"type":"hello","worker_id":"w","namespaces":)" + namespaces +
               R"(,"activity_types":["charge"],"max_in_flight":5)" +
               (node_label.empty() ? "" : R"(,"node":")" + node_label + "\"") + "}";
    };
    {
        test::WsClient foreign(node.port, "/v1/workers", worker.secret);
        foreign.send(hello(R"(["billing","orders"])", ""));
        const auto frame = foreign.read();
        REQUIRE(frame);
        const auto error = json::parse(*frame);
        CHECK(error["type"] == "error");
        CHECK(error["code"] == "forbidden");
        CHECK_THAT(error["message"].get<std::string>(), Catch::Contains("'orders'"));
        CHECK(foreign.await_close() == 1008);
    }
    {
        test::WsClient elsewhere(node.port, "/v1/workers", pinned.secret);
        elsewhere.send(hello(R"(["billing"])", "us-1"));
        const auto frame = elsewhere.read();
        REQUIRE(frame);
        CHECK(json::parse(*frame)["code"] == "forbidden");
    }
    test::WsClient own(node.port, "/v1/workers", worker.secret);
    own.send(hello(R"(["billing"])", ""));
    const auto welcome = own.read();
    REQUIRE(welcome);
    CHECK(json::parse(*welcome)["type"] == "welcome");
    const auto log = node.process->log();
    CHECK_THAT(
        log, Catch::Contains("event=worker_joined") && Catch::Contains("credential=" + worker.id) &&
                 Catch::Contains("peer=127.0.0.1:") && Catch::Contains("namespaces=\"billing\""));

    // Deleted by plain SQL (as another node's API would): closed within the refresh TTL.
    cluster.db.exec("DELETE FROM credentials WHERE id = '" + worker.id + "'");
    // (A WsClient read that times out abandons its connection: one long read.)
    const auto frame = own.read(10s);
    REQUIRE(frame);
    CHECK(json::parse(*frame)["code"] == "unauthorized");
    CHECK(own.await_close() == 1008);
}

TEST_CASE("five tenants' workers under a mixed load each get their own tasks only",
          "[e2e][access]") {
    E2eCluster cluster{"access_tenants"};
    auto& node = cluster.start_node("node-1", {{"OUTBOXD_ADMIN_TOKEN", kAdmin}});
    constexpr int kTenants = 5;
    constexpr int kRowsEach = 60;
    std::vector<std::string> logs;
    for (int t = 0; t < kTenants; ++t) {
        const auto ns = "tenant-" + std::to_string(t);
        const auto credential =
            create(node.port, {{"name", ns}, {"namespaces", {ns}}, {"roles", {"worker"}}});
        logs.push_back(cluster.dir() + "/" + ns + ".received");
        cluster.start_worker(ns, {node.worker_url()},
                             {"--token", credential.secret, "--namespaces", ns, "--activity-types",
                              "echo", "--received-log", logs.back()});
    }
    json rows = json::array();
    for (int i = 0; i < kRowsEach; ++i) {
        for (int t = 0; t < kTenants; ++t) {
            rows.push_back(
                {{"workflow_id", "tenant-" + std::to_string(t) + "-wf-" + std::to_string(i)},
                 {"ordinal", 0},
                 {"activity_type", "echo"},
                 {"namespace", "tenant-" + std::to_string(t)}});
        }
    }
    REQUIRE(
        http_call(node.port, "POST", "/v1/outbox", json{{"rows", rows}}.dump(), std::string{kAdmin})
            .status == 200);
    REQUIRE(E2eCluster::await(
        [&] { return cluster.count("status = 'done'") == std::int64_t{kTenants} * kRowsEach; },
        60s));
    for (int t = 0; t < kTenants; ++t) {
        const auto got = test::received(logs[static_cast<std::size_t>(t)]);
        CHECK(got.size() >= static_cast<std::size_t>(kRowsEach));
        for (const auto& line : got) {
            INFO("tenant-" << t << " received " << line);
            CHECK(line.starts_with("tenant-" + std::to_string(t) + "-wf-"));
        }
    }
}

TEST_CASE("every change is audited; no secret reaches a log, an audit row, a metric or an answer",
          "[e2e][access]") {
    E2eCluster cluster{"access_audit"};
    const std::string target_secret = "target-signing-secret-5f2a";
    const std::string header_secret = "header-value-secret-77c1";
    auto& node = cluster.start_node("node-1", {{"OUTBOXD_ADMIN_TOKEN", kAdmin},
                                               {"OUTBOXD_HTTP_ALLOWED_HOSTS", "hooks.invalid"}});
    const auto port = node.port;
    const auto op =
        create(port, {{"name", "ops"}, {"namespaces", {"billing"}}, {"roles", {"operator"}}});
    stage_tenants(port);
    cluster.db.exec(
        "UPDATE outbox SET status = 'failed', finished_at = now() "
        "WHERE workflow_id = 'billing-dead'");

    const auto as_op = [&](const std::string& method, const std::string& target,
                           const std::string& body = {}) {
        auto result = http_call(port, method, target, body, op.secret);
        INFO(method << " " << target << " -> " << result.body);
        CHECK(result.status == 200);
        return result;
    };
    std::vector<std::string> answers;
    answers.push_back(as_op("PUT", "/v1/namespaces/billing", R"({"weight":3})").body);
    answers.push_back(as_op("POST", "/v1/workflows/billing-wf/pause").body);
    answers.push_back(as_op("POST", "/v1/workflows/billing-wf/resume").body);
    answers.push_back(as_op("POST", "/v1/dead-letters/billing-dead:0/requeue").body);
    answers.push_back(as_op("POST", "/v1/dead-letters/purge", R"({"namespace":"billing"})").body);
    answers.push_back(as_op("PUT", "/v1/http-targets/hook",
                            json{{"namespace", "billing"},
                                 {"url", "https://hooks.invalid/in"},
                                 {"activity_types", {"never"}},
                                 {"signing_secret", target_secret},
                                 {"headers", {{"X-Api-Key", header_secret}}}}
                                .dump())
                          .body);
    answers.push_back(as_op("GET", "/v1/http-targets/hook").body);
    answers.push_back(as_op("PUT", "/v1/schedules/tick",
                            R"({"cron":"0 0 1 1 *","namespace":"billing","activity_type":"tick"})")
                          .body);
    answers.push_back(as_op("DELETE", "/v1/schedules/tick").body);
    answers.push_back(as_op("DELETE", "/v1/http-targets/hook").body);
    answers.push_back(as_op("POST", "/v1/workflows/billing-wf/cancel").body);
    answers.push_back(as_op("POST", "/v1/workflows/billing-wf/uncancel").body);
    const auto removed =
        http_call(port, "DELETE", "/v1/credentials/" + op.id, {}, std::string{kAdmin});
    REQUIRE(removed.status == 200);

    const auto audit = http_call(port, "GET", "/v1/audit?limit=100", {}, std::string{kAdmin});
    REQUIRE(audit.status == 200);
    answers.push_back(audit.body);
    const auto entries = json::parse(audit.body)["audit"];
    std::multiset<std::string> routes;
    for (const auto& e : entries) {
        routes.insert(e["method"].get<std::string>() + " " + e["route"].get<std::string>());
        CHECK_FALSE(e["at"].get<std::string>().empty());
    }
    for (const auto* expected :
         {"POST /v1/credentials", "PUT /v1/namespaces/{ns}", "POST /v1/workflows/{id}/pause",
          "POST /v1/workflows/{id}/resume", "POST /v1/dead-letters/{key}/requeue",
          "POST /v1/dead-letters/purge", "PUT /v1/http-targets/{name}", "PUT /v1/schedules/{id}",
          "DELETE /v1/schedules/{id}", "DELETE /v1/http-targets/{name}",
          "POST /v1/workflows/{id}/cancel", "POST /v1/workflows/{id}/uncancel",
          "DELETE /v1/credentials/{id}"}) {
        INFO(expected);
        CHECK(routes.contains(expected));
    }
    // The operator's changes name it and its namespace.
    const auto settings = std::find_if(entries.begin(), entries.end(), [](const json& e) {
        return e["route"] == "/v1/namespaces/{ns}";
    });
    REQUIRE(settings != entries.end());
    CHECK((*settings)["credential_id"] == op.id);
    CHECK((*settings)["namespace"] == "billing");
    CHECK((*settings)["change"]["body"]["weight"] == 3);
    const auto paged =
        json::parse(http_call(port, "GET", "/v1/audit?limit=2", {}, std::string{kAdmin}).body);
    CHECK(paged["audit"].size() == 2);
    // A cursor that is not one: a huge number, a NUL, text.
    for (const auto* after : {"99999999999999999999999", "%00", "abc", "-1"}) {
        INFO(after);
        CHECK(
            http_call(port, "GET", std::string{"/v1/audit?after="} + after, {}, std::string{kAdmin})
                .status == 400);
    }
    REQUIRE(paged["next"].is_string());
    const auto next = json::parse(
        http_call(port, "GET", "/v1/audit?limit=2&after=" + paged["next"].get<std::string>(), {},
                  std::string{kAdmin})
            .body);
    CHECK(next["audit"][0]["id"].get<std::int64_t>() < paged["audit"][1]["id"].get<std::int64_t>());

    // Nowhere: not the answers, the audit table, the metrics or the node's log.
    const auto table =
        cluster.db.exec("SELECT coalesce(string_agg(change::text, ' '), '') FROM audit_log")[0][0]
            .as<std::string>();
    const auto metrics = http_call(port, "GET", "/metrics").body;
    const auto log = node.process->log();
    for (const auto& secret : {target_secret, header_secret, op.secret, std::string{kAdmin}}) {
        INFO("secret " << secret);
        for (const auto& answer : answers) CHECK(answer.find(secret) == std::string::npos);
        CHECK(table.find(secret) == std::string::npos);
        CHECK(metrics.find(secret) == std::string::npos);
        CHECK(log.find(secret) == std::string::npos);
    }
}

TEST_CASE("a JWT's outboxd claim is its grant; a bad one is refused with a clear error",
          "[e2e][access]") {
    namespace keys = outboxd::auth::test;
    E2eCluster cluster{"access_jwt"};
    const auto keys_file = cluster.dir() + "/jwt-keys.pem";
    std::ofstream{keys_file} << keys::public_pem(keys::test_keys().rsa.get());
    auto& node = cluster.start_node("node-1", {{"OUTBOXD_JWT_KEYS_FILE", keys_file},
                                               {"OUTBOXD_JWT_ISSUER", "https://idp.example"},
                                               {"OUTBOXD_JWT_AUDIENCE", "outboxd"}});
    const auto now = std::chrono::duration_cast<std::chrono::seconds>(
                         std::chrono::system_clock::now().time_since_epoch())
                         .count();
    const auto token = [&](json grants, std::int64_t exp_in, const std::string& iss) {
        return keys::signed_token(keys::test_keys().rsa.get(), {{"alg", "RS256"}, {"typ", "JWT"}},
                                  {{"sub", "alice"},
                                   {"iss", iss},
                                   {"aud", "outboxd"},
                                   {"exp", now + exp_in},
                                   {"outboxd", std::move(grants)}});
    };
    const auto reader = token({"billing:reader", "billing:worker"}, 300, "https://idp.example");
    CHECK(http_call(node.port, "GET", "/v1/namespaces/billing", {}, reader).status == 200);
    CHECK(http_call(node.port, "GET", "/v1/namespaces/orders", {}, reader).status == 403);
    const auto whoami = json::parse(http_call(node.port, "GET", "/v1/whoami", {}, reader).body);
    CHECK(whoami["credential_id"] == "jwt:alice");
    {
        test::WsClient socket(node.port, "/v1/workers", reader);
        socket.send(
            R"({"type":"hello","worker_id":"w","namespaces":["billing"],"activity_types":["a"]})");
        const auto welcome = socket.read();
        REQUIRE(welcome);
        CHECK(json::parse(*welcome)["type"] == "welcome");
    }
    // Without a credential, the node is closed (JWT keys guard it).
    CHECK(http_call(node.port, "GET", "/v1/namespaces").status == 401);
    for (const auto& [bad, why] : std::vector<std::pair<std::string, std::string>>{
             {token({"*:admin"}, -300, "https://idp.example"), "expired"},
             {token({"*:admin"}, 300, "https://evil.example"), "iss"},
             {keys::signed_token(keys::test_keys().other_ec.get(), {{"alg", "ES256"}},
                                 {{"exp", now + 300}, {"outboxd", {"*:admin"}}}),
              ""},
             {keys::hs256_token(keys::public_pem(keys::test_keys().rsa.get()), {{"alg", "HS256"}},
                                {{"exp", now + 300}, {"outboxd", {"*:admin"}}}),
              "HS256"}}) {
        const auto refused = http_call(node.port, "GET", "/v1/namespaces", {}, bad);
        INFO(refused.body);
        CHECK(refused.status == 401);
        CHECK_THAT(error_of(refused)["message"].get<std::string>(),
                   Catch::StartsWith("JWT refused: ") && Catch::Contains(why));
    }
}

TEST_CASE("a node without credentials answers browsers only at its own origin and address",
          "[e2e][access]") {
    E2eCluster cluster{"access_open"};
    auto& open = cluster.start_node("open-node");
    const auto port = std::to_string(open.port);
    const auto status = [&](const std::string& headers) {
        const auto answer = test::raw_http(
            open.port, "GET /v1/namespaces HTTP/1.1\r\n" + headers + "Connection: close\r\n\r\n");
        return answer.size() > 12 ? std::stoi(answer.substr(9, 3)) : 0;
    };
    // curl, workers, SDKs: no browser marks.
    CHECK(status("Host: anything.example\r\n") == 200);
    // The console the node serves itself.
    CHECK(status("Host: 127.0.0.1:" + port + "\r\nOrigin: http://127.0.0.1:" + port +
                 "\r\nSec-Fetch-Site: same-origin\r\n") == 200);
    // Another site's page, and DNS rebinding (its own name now pointing at the node).
    CHECK(status("Host: 127.0.0.1:" + port + "\r\nOrigin: http://evil.example\r\n") == 403);
    CHECK(status("Host: evil.example:" + port + "\r\nOrigin: http://evil.example:" + port +
                 "\r\n") == 403);
    CHECK(status("Host: evil.example:" + port + "\r\nSec-Fetch-Mode: cors\r\n") == 403);
    // The worker socket alike.
    const auto upgrade = test::raw_http(
        open.port,
        "GET /v1/workers HTTP/1.1\r\nHost: 127.0.0.1:" + port +
            "\r\nOrigin: http://evil.example\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n");
    CHECK(upgrade.rfind("HTTP/1.1 403", 0) == 0);
    CHECK_THAT(open.process->log(), Catch::Contains("event=node_open"));

    // A guarded node leaves browsers to its credentials; its metrics may be private.
    auto& guarded = cluster.start_node(
        "guarded", {{"OUTBOXD_ADMIN_TOKEN", kAdmin}, {"OUTBOXD_METRICS_PRIVATE", "true"}});
    CHECK(http_call(guarded.port, "GET", "/metrics").status == 401);
    CHECK(http_call(guarded.port, "GET", "/metrics", {}, std::string{kAdmin}).status == 200);
    const auto reader =
        create(guarded.port, {{"name", "r"}, {"namespaces", {"billing"}}, {"roles", {"reader"}}});
    CHECK(http_call(guarded.port, "GET", "/metrics", {}, reader.secret).status == 403);
    CHECK(http_call(guarded.port, "GET", "/healthz").status == 200);
}
