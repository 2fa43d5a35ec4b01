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

std::string hello(const std::string& worker_id) {
    return json{{"type", "hello"},
                {"worker_id", worker_id},
                {"activity_types", {"never-staged"}},
                {"max_in_flight", 4}}
        .dump();
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
    cluster.db.exec("INSERT INTO outbox (workflow_id, ordinal, activity_type) "
                    "SELECT 'before-' || g, 0, 'echo' FROM generate_series(1, 50) g");


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

    cluster.db.exec("INSERT INTO outbox (workflow_id, ordinal, activity_type) "
                    "SELECT 'after-' || g, 0, 'echo' FROM generate_series(1, 50) g");
    REQUIRE(E2eCluster::await([&] { return cluster.count("status = 'done'") == 100; }, 30s));
    CHECK(cluster.count("status <> 'done'") == 0);
    CHECK(cluster.count("attempt <> 0") == 0);
    // The node counted what it refused.
    const auto metrics = test::http_call(node.port, "GET", "/metrics").body;
    CHECK(metrics.find("outboxd_protocol_errors_total{code=\"unknown_task\"}") != std::string::npos);
    CHECK(metrics.find("outboxd_protocol_errors_total{code=\"frame_too_large\"}") != std::string::npos);
}
