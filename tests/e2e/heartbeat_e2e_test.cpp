// A task's policy, heartbeats and cancel signals through real nodes (README, "Task policy and
// heartbeats", "Cancel signals"): long tasks kept alive by heartbeats across a shard
// hand-over, silent ones redelivered, per-activity attempts, backoff and timeouts, and a
// cancel reaching a worker on another node.

#include <thread>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "e2e_cluster.hpp"

using namespace outboxd;
using namespace std::chrono_literals;
using nlohmann::json;
using test::E2eCluster;
using test::http_call;
using test::WsClient;
using Clock = std::chrono::steady_clock;

namespace {

json next_frame(WsClient& client, std::chrono::milliseconds timeout = 5s) {
    const auto text = client.read(timeout);
    REQUIRE(text);
    return json::parse(*text);
}

void join(WsClient& client, const std::vector<std::string>& activities, int max_in_flight = 16,
          const std::string& ns = "default") {
    client.send(json{{"type", "hello"},
                     {"worker_id", "raw"},
                     {"namespaces", {ns}},
                     {"activity_types", activities},
                     {"max_in_flight", max_in_flight}}
                    .dump());
    REQUIRE(next_frame(client)["type"] == "welcome");
}

// The next task frame (batches opened), within `timeout`.
json task_frame(WsClient& client, std::chrono::milliseconds timeout = 5s) {
    const auto until = Clock::now() + timeout;
    while (Clock::now() < until) {
        const auto text = client.read(
            std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now()));
        if (!text) break;
        auto frame = json::parse(*text);
        if (frame["type"] == "task") return frame;
    }
    FAIL("no task frame");
    return {};
}

void stage(E2eCluster& cluster, const std::string& key, const std::string& activity,
           const std::string& workflow = "") {
    cluster.db.exec(
        "INSERT INTO outbox (dispatch_key, workflow_id, ordinal, activity_type) VALUES ('" + key +
        "', '" + (workflow.empty() ? key : workflow) + "', 0, '" + activity + "')");
}

// The node answers once its own settings cache has them: its tasks run under them from then.
void put_activities(const test::NodeHandle& node, const json& activities) {
    const auto put = http_call(node.port, "PUT", "/v1/namespaces/default",
                               json{{"activities", activities}}.dump());
    REQUIRE(put.status == 200);
}

std::string text_of(E2eCluster& cluster, const std::string& sql) {
    const auto result = cluster.db.exec(sql);
    return result.empty() || result[0][0].is_null() ? "" : result[0][0].as<std::string>();
}

}  // namespace

TEST_CASE("tasks heartbeating for many times their timeout complete once, across a shard hand-over",
          "[e2e][heartbeat]") {
    E2eCluster cluster{"heartbeat-long"};
    cluster.audit_claims();
    const std::map<std::string, std::string> env{{"OUTBOXD_TASK_TIMEOUT_MS", "1000"},
                                                 {"OUTBOXD_QUOTA_CACHE_TTL_MS", "200"},
                                                 {"OUTBOXD_LEASE_TTL_MS", "2000"}};
    auto& node1 = cluster.start_node("node-1", env);
    put_activities(node1, {{"long", {{"heartbeat_timeout_ms", 1000}}}});
    WsClient worker{node1.port, "/v1/workers"};
    join(worker, {"long"});
    constexpr int kRows = 12;
    for (int i = 0; i < kRows; ++i) stage(cluster, "long-" + std::to_string(i), "long");
    std::vector<std::string> task_ids;
    while (task_ids.size() < kRows) {
        const auto task = task_frame(worker);
        CHECK(task["heartbeat_timeout_ms"] == 1000);
        CHECK(task["timeout_ms"] == 0);  // no total limit
        task_ids.push_back(task["task_id"].get<std::string>());
    }

    // 13 s of heartbeats every 300 ms: 13x the heartbeat timeout, past the node-wide
    // backstop (timeout 1 s + 10 s grace). A second node joins meanwhile and takes shards.
    // node-2 is launched without waiting for it: the heartbeats must go on meanwhile (a start
    // that took over a second on a loaded machine let every task time out).
    const auto started = Clock::now();
    test::NodeHandle* node2 = nullptr;
    int beat = 0;
    while (Clock::now() - started < 13s) {
        ++beat;
        for (const auto& id : task_ids) {
            worker.send(json{{"type", "heartbeat"}, {"task_id", id}, {"progress", {{"beat", beat}}}}
                            .dump());
        }
        std::this_thread::sleep_for(300ms);
        if (!node2 && Clock::now() - started > 3s) node2 = &cluster.launch_node("node-2", env);
    }
    REQUIRE(node2 != nullptr);
    cluster.await_ready(*node2);
    // Some of the rows' shards are node-2's now: its reconcile saw them and left them.
    CHECK(cluster.count("status = 'claimed' AND shard IN (SELECT shard FROM shard_leases l "
                        "JOIN dispatcher_nodes n ON n.incarnation = l.owner "
                        "WHERE n.node_id = 'node-2')") >= 1);
    CHECK(cluster.count("status = 'claimed'") == kRows);
    // Progress and the heartbeat's time are shown.
    const auto shown = json::parse(http_call(node1.port, "GET", "/v1/outbox/long-0").body);
    CHECK(shown["progress"]["beat"].get<int>() >= beat - 20);
    CHECK(shown["heartbeat_at"].is_string());

    for (const auto& id : task_ids) {
        worker.send(json{{"type", "complete"}, {"task_id", id}}.dump());
    }
    REQUIRE(E2eCluster::await([&] { return cluster.count("status = 'done'") == kRows; }, 10s));
    // Nothing came meanwhile but the cluster's news: no task again, no cancel, no error (a
    // read that times out is the socket's last use).
    while (const auto text = worker.read(500ms)) {
        if (json::parse(*text)["type"] != "cluster") FAIL_CHECK("unexpected frame: " << *text);
    }
    CHECK(cluster.count("attempt <> 0") == 0);
    CHECK(
        cluster.db.exec("SELECT count(*) FROM claim_audit WHERE kind = 'claim'")[0][0].as<int>() ==
        kRows);
    CHECK(cluster.overlapping_claims() == 0);
    const auto statements = E2eCluster::metric(node1, "outboxd_lease_statements_total");
    REQUIRE(statements);
    // Batched: 12 tasks x ~43 heartbeats, a few writes a second at most.
    CHECK(*statements <= 40);
    CHECK(E2eCluster::metric(node1, "outboxd_heartbeats_total").value_or(0) >= kRows * 30);
}

TEST_CASE("a task that stops heartbeating is redelivered after its heartbeat timeout",
          "[e2e][heartbeat]") {
    E2eCluster cluster{"heartbeat-silent"};
    auto& node = cluster.start_node("node-1", {{"OUTBOXD_QUOTA_CACHE_TTL_MS", "200"}});
    put_activities(node, {{"long", {{"heartbeat_timeout_ms", 1000}, {"timeout_ms", 600000}}}});
    WsClient worker{node.port, "/v1/workers"};
    join(worker, {"long"});
    stage(cluster, "quiet", "long");
    const auto first = task_frame(worker);
    CHECK(first["timeout_ms"] == 600000);
    for (int i = 0; i < 3; ++i) {
        worker.send(json{{"type", "heartbeat"}, {"task_id", first["task_id"]}}.dump());
        std::this_thread::sleep_for(400ms);
    }
    const auto silent_from = Clock::now();
    const auto second = task_frame(worker, 10s);
    const auto silence = Clock::now() - silent_from;
    CHECK(second["dispatch_key"] == "quiet");
    CHECK(second["attempt"] == 2);
    CHECK(silence >= 900ms);
    CHECK(silence < 3s);
    CHECK_THAT(text_of(cluster, "SELECT last_error FROM outbox WHERE dispatch_key = 'quiet'"),
               Catch::Contains("no heartbeat for 1000 ms"));
    // A heartbeat for the task it no longer holds is answered with a cancel.
    worker.send(json{{"type", "heartbeat"}, {"task_id", first["task_id"]}}.dump());
    const auto cancel = next_frame(worker);
    CHECK(cancel["type"] == "cancel");
    CHECK(cancel["task_id"] == first["task_id"]);
}

TEST_CASE("per-activity attempt limits, backoff and timeouts, with * as the namespace default",
          "[e2e][heartbeat][policy]") {
    E2eCluster cluster{"activity-policy"};
    auto& node = cluster.start_node("node-1", {{"OUTBOXD_QUOTA_CACHE_TTL_MS", "200"},
                                               {"OUTBOXD_BACKOFF_BASE_MS", "50"},
                                               {"OUTBOXD_MAX_ATTEMPTS", "10"}});
    put_activities(node, {{"flaky",
                           {{"max_attempts", 2},
                            {"backoff", {{"base_ms", 1500}, {"multiplier", 1}, {"max_ms", 1500}}}}},
                          {"slow", {{"timeout_ms", 500}}},
                          {"*", {{"max_attempts", 3}}}});
    const auto shown = json::parse(http_call(node.port, "GET", "/v1/namespaces/default").body);
    CHECK(shown["activities"]["flaky"]["backoff"]["base_ms"] == 1500);
    CHECK(shown["activities"]["*"]["max_attempts"] == 3);
    CHECK(shown["activities"]["slow"]["heartbeat_timeout_ms"].is_null());
    WsClient worker{node.port, "/v1/workers"};
    join(worker, {"flaky", "other", "slow"});

    // flaky: its own backoff after the first failure, a dead letter after its second.
    stage(cluster, "f", "flaky");
    auto task = task_frame(worker);
    worker.send(json{{"type", "fail"}, {"task_id", task["task_id"]}, {"error", "one"}}.dump());
    REQUIRE(E2eCluster::await(
        [&] { return cluster.count("dispatch_key = 'f' AND status = 'pending'") == 1; }, 5s));
    CHECK(cluster.count("dispatch_key = 'f' AND visible_after > now() + interval '1 s'") == 1);
    task = task_frame(worker, 5s);
    CHECK(task["attempt"] == 2);
    worker.send(json{{"type", "fail"}, {"task_id", task["task_id"]}, {"error", "two"}}.dump());
    REQUIRE(E2eCluster::await(
        [&] { return cluster.count("dispatch_key = 'f' AND status = 'failed'") == 1; }, 5s));

    // other: the namespace default (*) allows 3 attempts, with the node's backoff.
    stage(cluster, "o", "other");
    for (int attempt = 1; attempt <= 3; ++attempt) {
        task = task_frame(worker, 5s);
        CHECK(task["dispatch_key"] == "o");
        CHECK(task["attempt"] == attempt);
        worker.send(json{{"type", "fail"}, {"task_id", task["task_id"]}, {"error", "x"}}.dump());
    }
    REQUIRE(E2eCluster::await(
        [&] {
            return cluster.count("dispatch_key = 'o' AND status = 'failed' AND attempt = 3") == 1;
        },
        5s));

    // slow: its own 500 ms timeout (the node's is 30 s), in the task frame too.
    stage(cluster, "s", "slow");
    task = task_frame(worker);
    CHECK(task["timeout_ms"] == 500);
    const auto again = task_frame(worker, 5s);
    CHECK(again["dispatch_key"] == "s");
    CHECK(again["attempt"] == 2);
    CHECK_THAT(text_of(cluster, "SELECT last_error FROM outbox WHERE dispatch_key = 's'"),
               Catch::Contains("timed out after 500 ms"));
}

TEST_CASE("task policy fields are validated, naming the field", "[e2e][heartbeat][policy]") {
    E2eCluster cluster{"activity-policy-bad"};
    auto& node = cluster.start_node("node-1");
    const std::vector<std::pair<std::string, std::string>> bad{
        {R"({"activities":{"a":{"max_attempts":0}}})", "activities.a.max_attempts"},
        {R"({"activities":{"a":{"max_attempts":1001}}})", "activities.a.max_attempts"},
        {R"({"activities":{"a":{"timeout_ms":5}}})", "activities.a.timeout_ms"},
        {R"({"activities":{"a":{"timeout_ms":"10"}}})", "activities.a.timeout_ms"},
        {R"({"activities":{"a":{"heartbeat_timeout_ms":99}}})",
         "activities.a.heartbeat_timeout_ms"},
        {R"({"activities":{"a":{"heartbeat_timeout_ms":18446744073709551615}}})",
         "activities.a.heartbeat_timeout_ms"},
        {R"({"activities":{"a":{"backoff":5}}})", "activities.a.backoff"},
        {R"({"activities":{"a":{"backoff":{"multiplier":0.5}}}})",
         "activities.a.backoff.multiplier"},
        {R"({"activities":{"a":{"backoff":{"base_ms":100,"max_ms":10}}}})",
         "activities.a.backoff.max_ms"},
        {R"({"activities":{"a":{"backoff":{"jitter":1}}}})", "activities.a.backoff.jitter"},
        {R"({"activities":{"*":{"max_in_flight":3}}})", "activities.*"},
        // Hostile: numbers past any range, NUL and 1 MB keys, 10,000 levels.
        {R"({"activities":{"a":{"timeout_ms":1e400}}})", "not valid JSON"},  // past a double
        {R"({"activities":{"a":{"timeout_ms":1.5}}})", "activities.a.timeout_ms"},
        {R"({"activities":{"a":{"backoff":{"multiplier":1e308}}}})",
         "activities.a.backoff.multiplier"},
        {R"({"activities":{"a":{"backoff":{"base_ms":-9223372036854775808}}}})",
         "activities.a.backoff.base_ms"},
        {R"({"activities":{"a\u0000b":{"max_attempts":3}}})", "activity type"},
        {R"({"activities":{"a":{")" + std::string(1 << 20, 'k') + R"(":1}}})", "unknown field"},
        {R"({"activities":{"a":{"backoff":)" + std::string(10000, '[') + std::string(10000, ']') +
             "}}}",
         "nest"},
    };
    for (const auto& [body, field] : bad) {
        INFO(body);
        const auto got = http_call(node.port, "PUT", "/v1/namespaces/default", body);
        CHECK(got.status == 400);
        CHECK_THAT(got.body, Catch::Contains(field));
    }
    CHECK(json::parse(http_call(node.port, "GET", "/v1/namespaces/default").body)["configured"] ==
          false);
    // Null fields are unset.
    const auto ok = http_call(node.port, "PUT", "/v1/namespaces/default",
                              R"({"activities":{"a":{"max_attempts":null,"timeout_ms":100}}})");
    CHECK(ok.status == 200);
}

TEST_CASE("a cancel reaches a worker connected to another node within one second",
          "[e2e][heartbeat][cancel]") {
    E2eCluster cluster{"cancel-signal"};
    auto& node1 = cluster.start_node("node-1");
    auto& node2 = cluster.start_node("node-2");
    WsClient worker{node1.port, "/v1/workers"};
    join(worker, {"work"});
    stage(cluster, "c-1", "work", "wf-c");
    stage(cluster, "c-2", "work", "wf-other");
    const auto first = task_frame(worker);
    const auto second = task_frame(worker);
    const auto& cancelled = first["workflow_id"] == "wf-c" ? first : second;
    const auto& kept = first["workflow_id"] == "wf-c" ? second : first;

    const auto asked = Clock::now();
    const auto got = http_call(node2.port, "POST", "/v1/workflows/wf-c/cancel");
    REQUIRE(got.status == 200);
    const auto cancel = next_frame(worker, 2s);
    const auto took = Clock::now() - asked;
    CHECK(cancel["type"] == "cancel");
    CHECK(cancel["task_id"] == cancelled["task_id"]);
    CHECK_THAT(cancel["reason"].get<std::string>(), Catch::Contains("cancelled"));
    CHECK(took < 1s);
    CHECK(E2eCluster::metric(node1, "outboxd_cancels_sent_total") == 1.0);

    // A later answer changes nothing and is no error; the other workflow is untouched.
    worker.send(json{{"type", "complete"}, {"task_id", cancelled["task_id"]}}.dump());
    worker.send(json{{"type", "complete"}, {"task_id", kept["task_id"]}}.dump());
    REQUIRE(E2eCluster::await([&] { return cluster.count("status = 'done'") == 1; }, 5s));
    CHECK(cluster.count("dispatch_key = 'c-1' AND status = 'cancelled'") == 1);
    CHECK_FALSE(worker.read(300ms));
}

TEST_CASE("outboxd-worker's sleep stops on a cancel and frees its slot",
          "[e2e][heartbeat][cancel]") {
    E2eCluster cluster{"cancel-sleep"};
    auto& node = cluster.start_node("node-1");
    cluster.start_worker("w", {node.worker_url()}, {"--max-in-flight", "1"});
    cluster.db.exec(
        "INSERT INTO outbox (dispatch_key, workflow_id, ordinal, activity_type, input)"
        " VALUES ('nap', 'wf-nap', 0, 'sleep', '{\"ms\": 60000}')");
    REQUIRE(E2eCluster::await([&] { return cluster.count("status = 'claimed'") == 1; }, 10s));
    REQUIRE(http_call(node.port, "POST", "/v1/workflows/wf-nap/cancel").status == 200);
    // The worker's one slot is free again long before the sleep would end.
    stage(cluster, "after", "noop");
    REQUIRE(E2eCluster::await(
        [&] { return cluster.count("dispatch_key = 'after' AND status = 'done'") == 1; }, 10s));
    CHECK(cluster.count("dispatch_key = 'nap' AND status = 'cancelled'") == 1);
}

TEST_CASE("outboxd-worker's sleep heartbeats a long task through to done, with its progress",
          "[e2e][heartbeat]") {
    E2eCluster cluster{"heartbeat-sdk"};
    cluster.audit_claims();
    auto& node = cluster.start_node("node-1", {{"OUTBOXD_QUOTA_CACHE_TTL_MS", "200"}});
    put_activities(node, {{"sleep", {{"heartbeat_timeout_ms", 400}}}});
    cluster.start_worker("w", {node.worker_url()}, {"--max-in-flight", "4"});
    cluster.db.exec(
        "INSERT INTO outbox (dispatch_key, workflow_id, ordinal, activity_type, input)"
        " VALUES ('long-nap', 'wf-long-nap', 0, 'sleep', '{\"ms\": 3000}')");
    REQUIRE(E2eCluster::await([&] { return cluster.count("status = 'done'") == 1; }, 20s));
    CHECK(cluster.count("attempt = 0") == 1);  // 7x its heartbeat timeout, never timed out
    CHECK(
        cluster.db.exec("SELECT count(*) FROM claim_audit WHERE kind = 'claim'")[0][0].as<int>() ==
        1);
    const auto shown = json::parse(http_call(node.port, "GET", "/v1/outbox/long-nap").body);
    CHECK(shown["progress"]["slept_ms"].get<int>() > 0);
    CHECK(shown["heartbeat_at"].is_string());
}
