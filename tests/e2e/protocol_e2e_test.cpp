// Protocol abuse against a real node: every bad client gets a clear refusal, nothing
// changes, and a well-behaved worker keeps being served.

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "e2e_cluster.hpp"

using namespace outboxd;
using namespace std::chrono_literals;
using nlohmann::json;
using test::E2eCluster;
using test::WsClient;

namespace {

constexpr const char* kToken = "s3cret-token";

// `batch_max_bytes` > 0: asks for batch frames of at most that size.
std::string hello(const std::string& worker_id, const std::string& activity = "never-staged",
                  int max_in_flight = 4, std::size_t batch_max_bytes = 0) {
    json frame{{"type", "hello"},
               {"worker_id", worker_id},
               {"activity_types", {activity}},
               {"max_in_flight", max_in_flight}};
    if (batch_max_bytes > 0) {
        frame["batch"] = true;
        frame["max_frame_bytes"] = batch_max_bytes;
    }
    return frame.dump();
}

// `count` rows of one activity type, each its own workflow `prefix-N`.
void stage(E2eCluster& cluster, const std::string& prefix, const std::string& activity, int count) {
    cluster.db.exec("INSERT INTO outbox (workflow_id, ordinal, activity_type) SELECT '" + prefix +
                    "-' || g, 0, '" + activity + "' FROM generate_series(1, " +
                    std::to_string(count) + ") g");
}

json next_frame(WsClient& client) {
    const auto text = client.read(5s);
    REQUIRE(text);
    return json::parse(*text);
}

void expect_error(WsClient& client, const std::string& code) {
    const auto frame = next_frame(client);
    CHECK(frame["type"] == "error");
    CHECK(frame["code"] == code);
    CHECK_FALSE(frame["message"].get<std::string>().empty());
}

}  // namespace

TEST_CASE("protocol abuse is refused clearly and never disturbs a well-behaved worker",
          "[e2e][protocol]") {
    E2eCluster cluster{"abuse"};
    auto& node = cluster.start_node(
        "node-1", {{"OUTBOXD_WORKER_TOKEN", kToken}, {"OUTBOXD_MAX_FRAME_BYTES", "4096"}});
    cluster.start_worker("good", {node.worker_url()},
                         {"--activity-types", "echo", "--token", kToken});

    // Work flows before, during and after the abuse.
    stage(cluster, "before", "echo", 50);

    // Missing and wrong tokens are refused before the upgrade.
    CHECK_THROWS_WITH(WsClient(node.port, "/v1/workers"), Catch::Contains("401"));
    CHECK_THROWS_WITH(WsClient(node.port, "/v1/workers", std::string{"wrong"}),
                      Catch::Contains("401"));
    CHECK_THROWS_WITH(WsClient(node.port, "/v1/elsewhere", std::string{kToken}),
                      Catch::Contains("404"));
    {  // ?token= works too
        WsClient client{node.port, std::string{"/v1/workers?token="} + kToken};
        client.send(hello("query-token"));
        CHECK(next_frame(client)["type"] == "welcome");
    }
    {  // garbage before hello: error, then the session is closed
        WsClient client{node.port, "/v1/workers", std::string{kToken}};
        client.send("{this is not json");
        expect_error(client, "bad_json");
        CHECK(client.await_close() != 0);
    }
    {  // a valid frame that is not hello, first
        WsClient client{node.port, "/v1/workers", std::string{kToken}};
        client.send(R"({"type":"complete","task_id":"1.1","result":null})");
        expect_error(client, "hello_required");
        CHECK(client.await_close() != 0);
    }
    {  // a hello missing its activity types
        WsClient client{node.port, "/v1/workers", std::string{kToken}};
        client.send(R"({"type":"hello","worker_id":"w"})");
        expect_error(client, "missing_field");
    }
    {  // after hello, bad frames are answered and the session carries on
        WsClient client{node.port, "/v1/workers", std::string{kToken}};
        client.send(hello("chatty"));
        const auto welcome = next_frame(client);
        CHECK(welcome["type"] == "welcome");
        CHECK(welcome["node_id"] == "node-1");
        CHECK(welcome["cluster"].size() == 1);
        client.send("[1,2,3]");
        expect_error(client, "bad_json");
        client.send(R"({"type":"teleport"})");
        expect_error(client, "unknown_type");
        client.send(R"({"type":"fail","error":"x"})");
        expect_error(client, "missing_field");
        client.send(R"({"type":"credit","max_in_flight":"lots"})");
        expect_error(client, "invalid_field");
        client.send(R"({"type":"complete","task_id":"12345.678","result":{}})");
        expect_error(client, "unknown_task");
        client.send(R"({"type":"fail","task_id":"nope","error":"x","retryable":false})");
        expect_error(client, "unknown_task");
        client.send(hello("again"));
        expect_error(client, "duplicate_hello");
        client.send_binary(std::string("\x00\x01\x02", 3));
        expect_error(client, "bad_json");
        // Still a live session: a credit change is silent, the next bad answer is refused.
        client.send(R"({"type":"credit","max_in_flight":2})");
        client.send(R"({"type":"complete","task_id":"1.1"})");
        expect_error(client, "unknown_task");
        CHECK(client.open());
    }
    {  // an oversized frame closes the connection with 1009 (message too big)
        WsClient client{node.port, "/v1/workers", std::string{kToken}};
        client.send(hello("big"));
        CHECK(next_frame(client)["type"] == "welcome");
        client.send(std::string(8192, 'x'));
        CHECK(client.await_close() == 1009);
    }
    {  // a worker that vanishes without closing is just a lost worker
        auto client = std::make_unique<WsClient>(node.port, "/v1/workers", std::string{kToken});
        client->send(hello("ghost"));
        CHECK(next_frame(*client)["type"] == "welcome");
        client.reset();
    }
    // Malformed HTTP on the same port.
    const auto answer = test::raw_http(node.port, "BLAH /v1 HTTP/9.9\r\n\r\n");
    CHECK(answer.find("400") != std::string::npos);

    stage(cluster, "after", "echo", 50);
    REQUIRE(E2eCluster::await([&] { return cluster.count("status = 'done'") == 100; }, 30s));
    CHECK(cluster.count("status <> 'done'") == 0);
    CHECK(cluster.count("attempt <> 0") == 0);
    // The node counted what it refused.
    CHECK(E2eCluster::metric(node, "outboxd_protocol_errors_total{code=\"unknown_task\"}")
              .value_or(0) >= 1);
    CHECK(E2eCluster::metric(node, "outboxd_protocol_errors_total{code=\"frame_too_large\"}")
              .value_or(0) >= 1);
    // Codes never sent are exported at zero from the start.
    CHECK(E2eCluster::metric(node, "outboxd_protocol_errors_total{code=\"draining\"}") == 0);
}

namespace {

// Reads frames until `wanted` tasks arrived; returns them and how many frames carried them.
// Every frame must be at most `max_bytes` long.
std::pair<std::vector<json>, int> read_tasks(WsClient& client, std::size_t wanted,
                                             std::size_t max_bytes = 1 << 20) {
    std::vector<json> tasks;
    int frames = 0;
    while (tasks.size() < wanted) {
        const auto text = client.read(5s);
        REQUIRE(text);
        CHECK(text->size() <= max_bytes);
        const auto frame = json::parse(*text);
        ++frames;
        if (frame["type"] == "batch") {
            for (const auto& member : frame["frames"]) {
                REQUIRE(member["type"] == "task");
                tasks.push_back(member);
            }
        } else {
            REQUIRE(frame["type"] == "task");
            tasks.push_back(frame);
        }
    }
    return {tasks, frames};
}

json complete_of(const json& task) {
    return {{"type", "complete"}, {"task_id", task["task_id"]}, {"result", {{"ok", true}}}};
}

}  // namespace

TEST_CASE("batch frames: negotiated in hello and welcome, checked whole, applied in order",
          "[e2e][protocol]") {
    E2eCluster cluster{"batch"};
    auto& node = cluster.start_node("node-1", {{"OUTBOXD_MAX_FRAME_BYTES", "65536"}});
    stage(cluster, "b", "batched", 20);

    WsClient client{node.port, "/v1/workers"};
    client.send(hello("batcher", "batched", 20, /*batch_max_bytes=*/2048));
    const auto welcome = next_frame(client);
    REQUIRE(welcome["type"] == "welcome");
    CHECK(welcome["batch"] == true);
    CHECK(welcome["max_frame_bytes"] == 65536);

    // One claim round's tasks leave together, in batches no larger than the hello allows
    // (a task frame is ~300 bytes: several batches).
    const auto [tasks, frames] = read_tasks(client, 20, 2048);
    CHECK(frames < 20);
    CHECK(frames >= 3);
    REQUIRE(E2eCluster::await([&] { return cluster.count("status = 'claimed'") == 20; }, 5s));

    // One bad member refuses the whole batch: the good answer in it is not applied either.
    client.send(json{{"type", "batch"}, {"frames", {complete_of(tasks[0]), {{"type", "complete"}}}}}
                    .dump());
    const auto refused = next_frame(client);
    CHECK(refused["type"] == "error");
    CHECK(refused["code"] == "missing_field");
    CHECK_THAT(refused["message"].get<std::string>(), Catch::Contains("frames[1]"));
    CHECK(cluster.count("status = 'claimed'") == 20);

    // Completes and fails in one batch; an unknown task in it is refused alone.
    json answers = json::array();
    for (std::size_t i = 0; i < 10; ++i) answers.push_back(complete_of(tasks[i]));
    answers.push_back({{"type", "complete"}, {"task_id", "no-such-task"}, {"result", nullptr}});
    for (std::size_t i = 10; i < 15; ++i) {
        answers.push_back({{"type", "fail"},
                           {"task_id", tasks[i]["task_id"]},
                           {"error", "bad input"},
                           {"retryable", false}});
    }
    client.send(json{{"type", "batch"}, {"frames", answers}}.dump());
    const auto unknown = next_frame(client);
    CHECK(unknown["code"] == "unknown_task");
    CHECK_THAT(unknown["message"].get<std::string>(), Catch::Contains("no-such-task"));
    // Plain frames still work on a batching session.
    for (std::size_t i = 15; i < 20; ++i) client.send(complete_of(tasks[i]).dump());
    REQUIRE(E2eCluster::await([&] { return cluster.count("status = 'done'") == 15; }, 10s));
    REQUIRE(E2eCluster::await([&] { return cluster.count("status = 'failed'") == 5; }, 10s));
    CHECK(cluster.count("status = 'failed' AND last_error = 'bad input'") == 5);
    CHECK(cluster.count("attempt <> 0 AND status = 'done'") == 0);

    // A worker that did not ask for batches gets one task per frame.
    stage(cluster, "p", "plain", 10);
    WsClient plain{node.port, "/v1/workers"};
    plain.send(hello("plain", "plain", 10));
    REQUIRE(next_frame(plain)["type"] == "welcome");
    const auto [plain_tasks, plain_frames] = read_tasks(plain, 10);
    CHECK(plain_frames == 10);
    for (const auto& task : plain_tasks) plain.send(complete_of(task).dump());
    REQUIRE(E2eCluster::await([&] { return cluster.count("status = 'done'") == 25; }, 10s));
}
