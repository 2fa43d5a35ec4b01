// A task's life through real nodes (README, "Results and trace context"): results kept,
// shown and bounded, a namespace that keeps none, an HTTP target's JSON answer as result, and
// the traceparent from the staging request to the task frame.

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "e2e_cluster.hpp"
#include "receiver.hpp"

using namespace outboxd;
using namespace std::chrono_literals;
using nlohmann::json;
using test::E2eCluster;
using test::http_call;
using test::WsClient;

namespace {

constexpr const char* kTrace = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

json next_frame(WsClient& client) {
    const auto text = client.read(5s);
    REQUIRE(text);
    return json::parse(*text);
}

// A raw worker for `activity`: hello, then its welcome.
json join(WsClient& client, const std::string& activity, int max_in_flight = 8,
          const std::string& ns = "default") {
    client.send(json{{"type", "hello"},
                     {"worker_id", "raw-" + activity},
                     {"namespaces", {ns}},
                     {"activity_types", {activity}},
                     {"max_in_flight", max_in_flight}}
                    .dump());
    auto welcome = next_frame(client);
    REQUIRE(welcome["type"] == "welcome");
    return welcome;
}

json task_frame(WsClient& client) {
    for (int i = 0; i < 10; ++i) {
        auto frame = next_frame(client);
        if (frame["type"] == "task") return frame;
    }
    FAIL("no task frame");
    return {};
}

json row(std::uint16_t port, const std::string& key) {
    const auto got = http_call(port, "GET", "/v1/outbox/" + key);
    REQUIRE(got.status == 200);
    return json::parse(got.body);
}

void stage_one(E2eCluster& cluster, const std::string& key, const std::string& activity,
               const std::string& ns = "default") {
    cluster.db.exec(
        "INSERT INTO outbox (dispatch_key, workflow_id, ordinal, activity_type, namespace) "
        "VALUES ('" +
        key + "', '" + key + "', 0, '" + activity + "', '" + ns + "')");
}

}  // namespace

TEST_CASE(
    "a worker's result is kept and shown; one the node cannot keep leaves the task "
    "outstanding",
    "[e2e][task_life]") {
    E2eCluster cluster{"results"};
    auto& node = cluster.start_node("node-1", {{"OUTBOXD_MAX_RESULT_BYTES", "1024"}});
    WsClient worker{node.port, "/v1/workers"};
    const auto welcome = join(worker, "compute");
    CHECK(welcome["max_result_bytes"] == 1024);

    stage_one(cluster, "big", "compute");
    const auto big = task_frame(worker);
    // Too large: refused, named, and the task is still the worker's to answer.
    worker.send(
        json{{"type", "complete"}, {"task_id", big["task_id"]}, {"result", std::string(2000, 'x')}}
            .dump());
    auto refused = next_frame(worker);
    CHECK(refused["type"] == "error");
    CHECK(refused["code"] == "result_refused");
    CHECK_THAT(refused["message"].get<std::string>(),
               Catch::Contains(big["task_id"].get<std::string>()) && Catch::Contains("1024"));
    // \u0000: jsonb cannot hold it; refused the same way.
    worker.send(R"({"type":"complete","task_id":)" + big["task_id"].dump() +
                R"(,"result":{"k":"a\u0000b"}})");
    refused = next_frame(worker);
    CHECK(refused["code"] == "result_refused");
    CHECK_THAT(refused["message"].get<std::string>(), Catch::Contains("u0000"));
    CHECK(cluster.count("dispatch_key = 'big' AND status = 'claimed'") == 1);

    // A result it can keep ends the task, and the API shows it.
    const json result = {{"charged", 5}, {"receipt", "r-1"}, {"items", {1, 2, 3}}};
    worker.send(json{{"type", "complete"}, {"task_id", big["task_id"]}, {"result", result}}.dump());
    REQUIRE(E2eCluster::await([&] { return cluster.count("status = 'done'") == 1; }, 10s));
    const auto shown = row(node.port, "big");
    CHECK(shown["status"] == "done");
    CHECK(shown["result"] == result);
    CHECK(shown["traceparent"].is_null());

    // A null result, or none, keeps none.
    stage_one(cluster, "plain", "compute");
    const auto plain = task_frame(worker);
    worker.send(json{{"type", "complete"}, {"task_id", plain["task_id"]}}.dump());
    REQUIRE(E2eCluster::await([&] { return cluster.count("status = 'done'") == 2; }, 10s));
    CHECK(row(node.port, "plain")["result"].is_null());
}

TEST_CASE("a namespace that keeps no results stores none; an echo worker's result round trips",
          "[e2e][task_life]") {
    E2eCluster cluster{"keep-results"};
    auto& node = cluster.start_node("node-1", {{"OUTBOXD_QUOTA_CACHE_TTL_MS", "200"}});
    const auto put =
        http_call(node.port, "PUT", "/v1/namespaces/quiet", R"({"keep_results": false})");
    REQUIRE(put.status == 200);
    CHECK(json::parse(http_call(node.port, "GET", "/v1/namespaces/quiet").body)["keep_results"] ==
          false);
    CHECK(json::parse(http_call(node.port, "GET", "/v1/namespaces/default").body)["keep_results"] ==
          true);
    const auto bad = http_call(node.port, "PUT", "/v1/namespaces/quiet", R"({"keep_results": 1})");
    CHECK(bad.status == 400);
    CHECK_THAT(bad.body, Catch::Contains("keep_results"));

    cluster.start_worker("echo", {node.worker_url()},
                         {"--namespaces", "default,quiet", "--activity-types", "echo"});
    cluster.db.exec(
        "INSERT INTO outbox (dispatch_key, workflow_id, ordinal, activity_type, namespace, input) "
        "VALUES ('kept', 'kept', 0, 'echo', 'default', '{\"order\": 17, \"lines\": [\"a\"]}'),"
        "       ('dropped', 'dropped', 0, 'echo', 'quiet', '{\"order\": 18}')");
    REQUIRE(E2eCluster::await([&] { return cluster.count("status = 'done'") == 2; }, 30s));
    CHECK(row(node.port, "kept")["result"] == json::parse(R"({"order": 17, "lines": ["a"]})"));
    CHECK(row(node.port, "dropped")["result"].is_null());
}

TEST_CASE("an HTTP target's 2xx JSON answer is the row's result", "[e2e][task_life]") {
    E2eCluster cluster{"http-result"};
    // The receiver listens on 127.0.0.1: loopback, reached only when the allow-list holds it.
    auto& node = cluster.start_node("node-1", {{"OUTBOXD_QUOTA_CACHE_TTL_MS", "200"},
                                               {"OUTBOXD_HTTP_ALLOWED_HOSTS", "127.0.0.1"}});
    test::Receiver receiver{cluster.dir(), "receiver", {}};
    const json target = {{"namespace", "default"},     {"task_queue", "default"},
                         {"activity_types", {"hook"}}, {"url", receiver.url()},
                         {"max_in_flight", 4},         {"timeout_ms", 5000}};
    REQUIRE(http_call(node.port, "PUT", "/v1/http-targets/t", target.dump()).status == 200);
    stage_one(cluster, "pushed", "hook");
    REQUIRE(E2eCluster::await([&] { return cluster.count("status = 'done'") == 1; }, 30s));
    CHECK(row(node.port, "pushed")["result"] == json::parse(R"({"ok": true})"));
}

TEST_CASE("a traceparent goes from the staging request to the task frame; a bad one is refused",
          "[e2e][task_life]") {
    E2eCluster cluster{"traceparent"};
    auto& node = cluster.start_node("node-1");
    const auto refused = http_call(node.port, "POST", "/v1/outbox",
                                   json{{"rows",
                                         {{{"workflow_id", "t"},
                                           {"ordinal", 0},
                                           {"activity_type", "traced"},
                                           {"traceparent", "00-abc-def-01"}}}}}
                                       .dump());
    CHECK(refused.status == 400);
    CHECK_THAT(refused.body, Catch::Contains("traceparent"));
    CHECK(cluster.count("true") == 0);

    const auto staged = http_call(node.port, "POST", "/v1/outbox",
                                  json{{"rows",
                                        {{{"workflow_id", "t"},
                                          {"ordinal", 0},
                                          {"activity_type", "traced"},
                                          {"traceparent", kTrace}}}}}
                                      .dump());
    INFO(staged.body);
    REQUIRE(staged.status == 200);
    CHECK(row(node.port, "t:0")["traceparent"] == kTrace);

    WsClient worker{node.port, "/v1/workers"};
    join(worker, "traced");
    const auto task = task_frame(worker);
    CHECK(task["traceparent"] == kTrace);
    worker.send(json{{"type", "complete"}, {"task_id", task["task_id"]}}.dump());
    REQUIRE(E2eCluster::await([&] { return cluster.count("status = 'done'") == 1; }, 10s));

    // A row without one: the frame has no traceparent at all (older workers see nothing new).
    stage_one(cluster, "untraced", "traced");
    CHECK_FALSE(task_frame(worker).contains("traceparent"));
}
