// Hostile and broken clients against a real node: each case was once enough to kill a node
// or wedge its dispatch. A bad request or session ends that request or session; the node
// keeps serving everyone else.

#include <sys/resource.h>

#include <csignal>
#include <filesystem>
#include <thread>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "e2e_cluster.hpp"
#include "tcp_proxy.hpp"

using namespace outboxd;
using namespace std::chrono_literals;
using nlohmann::json;
using test::E2eCluster;
using test::WsClient;

namespace {

constexpr const char* kAdminToken = "admin-s3cret";

std::string hello(const std::string& worker_id, const json& activity_types, int max_in_flight = 4) {
    return json{{"type", "hello"},
                {"worker_id", worker_id},
                {"activity_types", activity_types},
                {"max_in_flight", max_in_flight}}
        .dump();
}

json next_frame(WsClient& client, std::chrono::milliseconds timeout = 5s) {
    const auto text = client.read(timeout);
    REQUIRE(text);
    return json::parse(*text);
}

// The next frame that is not an error (errors may be queued ahead of a task).
json next_task(WsClient& client) {
    for (int i = 0; i < 100; ++i) {
        auto frame = next_frame(client, 10s);
        if (frame["type"] == "task") return frame;
    }
    FAIL("no task frame");
    return {};
}

void stage(E2eCluster& cluster, const std::string& prefix, const std::string& activity, int count) {
    cluster.db.exec("INSERT INTO outbox (workflow_id, ordinal, activity_type) SELECT '" + prefix +
                    "-' || g, 0, '" + activity + "' FROM generate_series(1, " +
                    std::to_string(count) + ") g");
}

bool serves(const test::NodeHandle& node) {
    try {
        return test::http_call(node.port, "GET", "/healthz").status == 200;
    } catch (const std::exception&) {
        return false;
    }
}

// The status code of a raw HTTP answer ("HTTP/1.1 400 Bad Request…" -> 400), 0 for none.
int status_of(const std::string& answer) {
    if (answer.rfind("HTTP/1.1 ", 0) != 0 || answer.size() < 12) return 0;
    return std::stoi(answer.substr(9, 3));
}

std::string body_of(const std::string& answer) {
    const auto split = answer.find("\r\n\r\n");
    return split == std::string::npos ? std::string{} : answer.substr(split + 4);
}

std::string nested(std::size_t depth) { return std::string(depth, '[') + std::string(depth, ']'); }

}  // namespace

TEST_CASE("a URL that is not UTF-8 is refused and never takes the node down", "[e2e][hostile]") {
    E2eCluster cluster{"hostile-url"};
    auto& open = cluster.start_node("open-node");
    auto& guarded = cluster.start_node("guarded-node", {{"OUTBOXD_ADMIN_TOKEN", kAdminToken}});

    for (auto* node : {&open, &guarded}) {
        for (const std::string request :
             {"GET /\xc3 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
              "GET /v1/\xff\xfe/x HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
              "POST /v1/workflows/x/%ff HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nConnection: "
              "close\r\n\r\n",
              "GET /v1/outbox/%c3 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
              "GET /v1/outbox/a%00b HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
              "GET /v1/dead-letters?namespace=%ff HTTP/1.1\r\nHost: x\r\nConnection: "
              "close\r\n\r\n"}) {
            INFO(node->name << ": "
                            << json(request).dump(-1, ' ', true, json::error_handler_t::replace));
            const auto answer = test::raw_http(node->port, request);
            const int status = status_of(answer);
            CHECK(status >= 400);
            CHECK(status < 500);
            // The body is JSON that names the problem, whatever bytes the URL held.
            const auto body = json::parse(body_of(answer), nullptr, false);
            REQUIRE_FALSE(body.is_discarded());
            CHECK_FALSE(body["error"]["message"].get<std::string>().empty());
            CHECK(serves(*node));
        }
        CHECK(node->process->running());
    }
    // The guarded node asks for its token before it looks at the route.
    CHECK(status_of(test::raw_http(
              guarded.port,
              "POST /v1/workflows/x/%ff HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")) == 401);
    CHECK(test::http_call(guarded.port, "POST", "/v1/workflows/x/%ff", "", std::string{kAdminToken})
              .status == 400);
}

TEST_CASE("deeply nested JSON is refused with a clear error and never overflows the stack",
          "[e2e][hostile]") {
    E2eCluster cluster{"hostile-depth"};
    auto& node = cluster.start_node("node-1");

    const std::string deep_row =
        R"({"rows":[{"workflow_id":"w","ordinal":0,"activity_type":"a","input":)" + nested(30000) +
        "}]}";
    const auto staged = test::http_call(node.port, "POST", "/v1/outbox", deep_row);
    CHECK(staged.status == 400);
    CHECK(staged.body.find("nest") != std::string::npos);
    CHECK(test::http_call(node.port, "PUT", "/v1/namespaces/deep", nested(30000)).status == 400);
    // Just within the limit is fine.
    const std::string fine_row =
        R"({"rows":[{"workflow_id":"w","ordinal":0,"activity_type":"a","input":)" + nested(100) +
        "}]}";
    CHECK(test::http_call(node.port, "POST", "/v1/outbox", fine_row).status == 200);
    CHECK(node.process->running());

    // A row inserted by plain SQL may nest deeper than any frame may: reading it back over
    // the API must not recurse through it, and dispatching it dead-letters it with a reason
    // instead of sending a frame no worker reads.
    cluster.db.exec(
        "INSERT INTO outbox (workflow_id, ordinal, activity_type, input) VALUES "
        "('deep-sql', 0, 'echo', '" +
        nested(5000) + "')");
    const auto found = test::http_call(node.port, "GET", "/v1/outbox/deep-sql:0");
    CHECK(found.status == 200);
    CHECK(found.body.find(nested(5000)) != std::string::npos);
    cluster.start_worker("w", {node.worker_url()}, {"--activity-types", "echo"});
    REQUIRE(E2eCluster::await([&] { return cluster.count("status = 'failed'") == 1; }, 15s));
    CHECK(cluster.db.exec("SELECT last_error FROM outbox WHERE dispatch_key = 'deep-sql:0'")[0][0]
              .as<std::string>()
              .find("nests deeper") != std::string::npos);
    CHECK(node.process->running());
}

TEST_CASE("a hello with a NUL in an activity type is refused and dispatch goes on",
          "[e2e][hostile]") {
    E2eCluster cluster{"hostile-nul-hello"};
    auto& node = cluster.start_node("node-1");
    cluster.start_worker("good", {node.worker_url()}, {"--activity-types", "echo"});

    // Invalid UTF-8 cannot even be put into a json value: that hello is written by hand.
    for (const std::string& text :
         {hello("hostile", json{std::string{"b\0", 2}}),
          hello("hostile", json{"ok", std::string(2000, 'x')}),
          hello(std::string{"w\0", 2}, json{"ok"}),
          std::string{
              "{\"type\":\"hello\",\"worker_id\":\"h\",\"activity_types\":[\"bad\xc3\"]}"}}) {
        WsClient hostile{node.port, "/v1/workers"};
        hostile.send(text);
        // An error frame naming the field, then the close (a text frame that is not UTF-8
        // is closed by the WebSocket layer itself, code 1007).
        if (const auto refusal = hostile.read(5s)) {
            const auto frame = json::parse(*refusal);
            CHECK(frame["type"] == "error");
            CHECK(frame["code"] == "invalid_field");
        }
        CHECK(hostile.await_close() != 0);
    }
    // A hostile worker that stays connected cannot disturb other routes either.
    const auto claims_before = E2eCluster::metric(node, "outboxd_claim_seconds_count").value_or(0);
    stage(cluster, "good", "echo", 200);
    REQUIRE(E2eCluster::await([&] { return cluster.count("status = 'done'") == 200; }, 15s));
    std::this_thread::sleep_for(1s);
    // Idle: the rounds ran for the wakes and the poll, not thousands a second.
    CHECK(E2eCluster::metric(node, "outboxd_claim_seconds_count").value_or(0) - claims_before <
          200);
    CHECK(node.process->running());
}

TEST_CASE("a fail whose error text holds a NUL is recorded and never wedges the outcome writer",
          "[e2e][hostile]") {
    E2eCluster cluster{"hostile-nul-fail"};
    auto& node = cluster.start_node("node-1", {{"OUTBOXD_BACKOFF_BASE_MS", "1"},
                                               {"OUTBOXD_MAX_ATTEMPTS", "3"},
                                               {"OUTBOXD_DRAIN_TIMEOUT_MS", "5000"}});
    WsClient worker{node.port, "/v1/workers"};
    worker.send(hello("raw", json{"nul"}, 1));
    REQUIRE(next_frame(worker)["type"] == "welcome");

    stage(cluster, "nul", "nul", 1);
    auto task = next_task(worker);
    worker.send(json{
        {"type", "fail"},
        {"task_id", task["task_id"]},
        {"error", std::string{"card\0declined", 13}},
        {"retryable",
         true}}.dump());
    // Retried, with the error kept legibly, and delivered again.
    task = next_task(worker);
    CHECK(task["attempt"] == 2);
    const auto error =
        cluster.db.exec("SELECT last_error FROM outbox WHERE workflow_id = 'nul-1'")[0][0]
            .as<std::string>();
    CHECK(error.find("card") != std::string::npos);
    CHECK(error.find("declined") != std::string::npos);
    worker.send(json{{"type", "complete"}, {"task_id", task["task_id"]}}.dump());
    REQUIRE(E2eCluster::await([&] { return cluster.count("status = 'done'") == 1; }, 10s));

    // A row staged by plain SQL on its last possible attempt: the failure saturates instead
    // of overflowing, and the row dead-letters.
    cluster.db.exec(
        "INSERT INTO outbox (workflow_id, ordinal, activity_type, attempt) "
        "VALUES ('max-attempt', 0, 'nul', 2147483647)");
    task = next_task(worker);
    CHECK(task["attempt"].get<std::int64_t>() >= 2147483647);
    worker.send(json{{"type", "fail"}, {"task_id", task["task_id"]}, {"error", "no"}}.dump());
    REQUIRE(E2eCluster::await([&] { return cluster.count("status = 'failed'") == 1; }, 10s));
    CHECK(cluster.db.exec("SELECT attempt FROM outbox WHERE workflow_id = 'max-attempt'")[0][0]
              .as<std::int64_t>() == 2147483647);

    // The writer is healthy: new work flows, and SIGTERM drains and exits cleanly.
    stage(cluster, "after", "nul", 1);
    task = next_task(worker);
    worker.send(json{{"type", "complete"}, {"task_id", task["task_id"]}}.dump());
    REQUIRE(E2eCluster::await([&] { return cluster.count("status = 'done'") == 2; }, 10s));
    node.process->signal(SIGTERM);
    CHECK(node.process->wait(15s) == 0);
}

TEST_CASE("a worker closed as too slow is cleaned up and its route is served by others",
          "[e2e][hostile]") {
    E2eCluster cluster{"hostile-slow"};
    auto& node = cluster.start_node("node-1", {{"OUTBOXD_MAX_WRITE_QUEUE", "8"}});
    {
        WsClient slow{node.port, "/v1/workers"};
        slow.send(hello("slow", json{"echo"}, 8));
        REQUIRE(next_frame(slow)["type"] == "welcome");
        REQUIRE(E2eCluster::await(
            [&] { return E2eCluster::metric(node, "outboxd_workers_connected") == 1.0; }, 5s));
        // Never reads: each unknown answer queues an error frame until the node gives up.
        const std::string unknown = R"({"type":"complete","task_id":"1.1"})";
        try {
            for (int i = 0; i < 400000 && slow.open(); ++i) slow.send(unknown);
        } catch (const std::exception&) {
            // Closed by the node mid-send: what we wanted.
        }
        REQUIRE(node.process->await_log("event=slow_consumer_closed", 20s));
        // The node forgets it at once, without waiting for the client to go.
        CHECK(E2eCluster::await(
            [&] { return E2eCluster::metric(node, "outboxd_workers_connected") == 0.0; }, 5s));
        CHECK(node.process->await_log("event=worker_left", 5s));
    }
    // Its route's rows go to a live worker, not into a dead session.
    // (Its credit stays under the tiny queue bound: a round's tasks are queued together.)
    cluster.start_worker("good", {node.worker_url()},
                         {"--activity-types", "echo", "--max-in-flight", "4"});
    stage(cluster, "slow", "echo", 50);
    CHECK(E2eCluster::await([&] { return cluster.count("status = 'done'") == 50; }, 10s));

    CHECK(node.process->running());
}

TEST_CASE("a client that never reads cannot make the node hold more than its queue bound",
          "[e2e][hostile]") {
    E2eCluster cluster{"hostile-bytes"};
    auto& node = cluster.start_node("node-1", {{"OUTBOXD_MAX_FRAME_BYTES", "2000000"}});
    WsClient greedy{node.port, "/v1/workers", std::nullopt, 4 << 20};
    greedy.send(hello("greedy", json{"nothing"}));
    REQUIRE(next_frame(greedy)["type"] == "welcome");
    const auto rss_before = node.process->rss_bytes();
    // Each answer names a huge task id, which an error frame used to echo in full.
    const std::string answer =
        json{{"type", "complete"}, {"task_id", std::string(1'000'000, '7')}}.dump();
    // Refused as invalid (a task id of at most 64 bytes), each with an error frame it never
    // reads, until the node closes it as too slow.
    const std::string refused = R"(outboxd_protocol_errors_total{code="invalid_field"})";
    const std::string closed = "outboxd_slow_consumers_closed_total";
    const auto refused_before = E2eCluster::metric(node, refused).value_or(0);
    const auto closed_before = E2eCluster::metric(node, closed).value_or(0);
    int sent = 0;
    try {
        for (; sent < 400 && greedy.open(); ++sent) greedy.send(answer);
    } catch (const std::exception&) {
    }
    // The node has read what was sent: every answer refused, or the connection closed.
    REQUIRE(E2eCluster::await(
        [&] {
            return E2eCluster::metric(node, refused).value_or(0) >= refused_before + sent ||
                   E2eCluster::metric(node, closed).value_or(0) > closed_before;
        },
        30s));
    const auto grown =
        static_cast<double>(node.process->rss_bytes()) - static_cast<double>(rss_before);
    INFO("node RSS grew by " << grown / 1e6 << " MB after 400 MB of answers");
    CHECK(grown < 64e6);
    CHECK(serves(node));
}

TEST_CASE("an unreachable database is retried with backoff, not in a spin", "[e2e][hostile]") {
    E2eCluster cluster{"hostile-outage"};
    test::TcpProxy proxy{E2eCluster::pg_port()};
    auto& node =
        cluster.start_node("node-1", {{"OUTBOXD_DATABASE_URL", cluster.url_via(proxy.port())}});
    WsClient worker{node.port, "/v1/workers"};
    worker.send(hello("idle", json{"idle"}));
    REQUIRE(next_frame(worker)["type"] == "welcome");

    proxy.cut();
    // The claims and the wake listener noticed.
    REQUIRE(node.process->await_log("event=claims_failing", 10s));
    REQUIRE(node.process->await_log("event=wake_listener_down", 10s));
    const auto claims_before = E2eCluster::metric(node, "outboxd_claim_seconds_count").value_or(0);
    const auto wake_logs_before = node.process->log_count("event=wake_listener_down");
    const auto cpu_before = node.process->cpu_seconds();
    std::this_thread::sleep_for(3s);
    const auto claims =
        E2eCluster::metric(node, "outboxd_claim_seconds_count").value_or(0) - claims_before;
    const auto wake_logs = node.process->log_count("event=wake_listener_down") - wake_logs_before;
    const auto cpu = node.process->cpu_seconds() - cpu_before;
    INFO("in 3 s of outage: " << claims << " claim rounds, " << wake_logs
                              << " wake listener log lines, " << cpu << " s of CPU");
    CHECK(claims < 30);
    CHECK(wake_logs < 10);
    CHECK(cpu < 0.5);
    CHECK(serves(node));

    proxy.restore();
    stage(cluster, "after", "idle", 1);
    const auto task = next_task(worker);
    CHECK(task["dispatch_key"] == "after-1:0");
}

TEST_CASE(
    "running out of file descriptors backs the accept loop off, and a connection cap "
    "refuses the excess with 503",
    "[e2e][hostile]") {
    E2eCluster cluster{"hostile-fds"};
    SECTION("file descriptors run out") {
        // prlimit execs the node with its own descriptor limit.
        std::map<std::string, std::string> env{{"OUTBOXD_DATABASE_URL", cluster.db.url()},
                                               {"OUTBOXD_LISTEN", "127.0.0.1:0"},
                                               {"OUTBOXD_NODE_ID", "fd-node"},
                                               {"OUTBOXD_MAX_CONNECTIONS", "100000"}};
        test::Process limited(
            {"/usr/bin/prlimit", "--nofile=128:128", test::bin_dir() + "/outboxd"}, env,
            cluster.dir() + "/fd-node.log");
        REQUIRE(limited.await_log("event=listening", 30s));
        const auto port = *test::listening_port(limited.log());
        REQUIRE(E2eCluster::await(
            [&] {
                try {
                    return test::http_call(port, "GET", "/healthz").status == 200;
                } catch (const std::exception&) {
                    return false;
                }
            },
            10s));
        // Plain connections complete in the kernel's backlog whether or not the node accepts
        // them: once its descriptors are gone, the rest wait there, ready to be accepted.
        boost::asio::io_context ioc;
        std::vector<boost::asio::ip::tcp::socket> held;
        for (int i = 0; i < 200; ++i) {
            held.emplace_back(ioc);
            held.back().connect({boost::asio::ip::make_address("127.0.0.1"), port});
        }
        REQUIRE(limited.await_log("event=accept_failed", 10s));
        const auto cpu_before = limited.cpu_seconds();
        const auto log_before = std::filesystem::file_size(cluster.dir() + "/fd-node.log");
        std::this_thread::sleep_for(2s);
        const auto cpu = limited.cpu_seconds() - cpu_before;
        const auto logged = std::filesystem::file_size(cluster.dir() + "/fd-node.log") - log_before;
        INFO("out of descriptors for 2 s: " << cpu << " s CPU, " << logged << " bytes of log");
        CHECK(cpu < 0.5);
        CHECK(logged < 4096);
        held.clear();
        CHECK(E2eCluster::await(
            [&] {
                try {
                    return test::http_call(port, "GET", "/healthz").status == 200;
                } catch (const std::exception&) {
                    return false;
                }
            },
            10s));
        CHECK(limited.running());
    }
    SECTION("a connection cap") {
        auto& node = cluster.start_node("node-1", {{"OUTBOXD_MAX_CONNECTIONS", "10"}});
        std::vector<std::unique_ptr<WsClient>> held;
        for (int i = 0; i < 10; ++i)
            held.push_back(std::make_unique<WsClient>(node.port, "/v1/workers"));
        const auto refused = test::raw_http(
            node.port, "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
        CHECK(status_of(refused) == 503);
        CHECK(body_of(refused).find("connection") != std::string::npos);
        held.pop_back();
        CHECK(E2eCluster::await([&] { return serves(node); }, 5s));
        CHECK(node.process->running());
    }
}

TEST_CASE("a database that accepts but never answers is given up on within the connect timeout",
          "[e2e][hostile]") {
    // A listener that never speaks: the TCP connection succeeds, the startup never finishes.
    boost::asio::io_context ioc;
    boost::asio::ip::tcp::acceptor silent{ioc, {boost::asio::ip::make_address("127.0.0.1"), 0}};
    const auto port = silent.local_endpoint().port();
    const auto started = std::chrono::steady_clock::now();
    test::Process migrate({test::bin_dir() + "/outboxd", "migrate", "--database-url",
                           "postgresql://postgres@127.0.0.1:" + std::to_string(port) + "/x"},
                          {}, test::scratch_dir("hostile-silent") + "/migrate.log");
    const auto code = migrate.wait(30s);
    const auto took =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    INFO(migrate.log());
    REQUIRE(code);
    CHECK(*code != 0);
    CHECK(took < 20);
}

TEST_CASE("a client without the admin token is refused before it sends its body",
          "[e2e][hostile]") {
    E2eCluster cluster{"hostile-early-401"};
    auto& node = cluster.start_node("node-1", {{"OUTBOXD_ADMIN_TOKEN", kAdminToken},
                                               {"OUTBOXD_WORKER_TOKEN", "worker-s3cret"}});
    // Announces 100 MB and sends none of it: the answer comes from the header alone.
    const auto started = std::chrono::steady_clock::now();
    const auto answer = test::raw_http(
        node.port, "POST /v1/outbox HTTP/1.1\r\nHost: x\r\nContent-Length: 100000000\r\n\r\n");
    CHECK(status_of(answer) == 401);
    CHECK(std::chrono::steady_clock::now() - started < 3s);
    // Also where the worker token would do for an upgrade, and wherever a method is wrong
    // (found by the API router fuzzer).
    for (const std::string head : {"POST /v1/workers", "GET /v1/workers", "POST /v1/cluster"}) {
        INFO(head);
        const auto quick = std::chrono::steady_clock::now();
        CHECK(status_of(test::raw_http(
                  node.port, head + " HTTP/1.1\r\nHost: x\r\nContent-Length: 100000000\r\n\r\n")) ==
              401);
        CHECK(std::chrono::steady_clock::now() - quick < 3s);
    }
    // With the token, the same header is read on (and refused for its size).
    const auto sized =
        test::raw_http(node.port, std::string{"POST /v1/outbox HTTP/1.1\r\nHost: x\r\n"} +
                                      "Authorization: Bearer " + kAdminToken +
                                      "\r\nContent-Length: 100000000\r\n\r\n");
    CHECK(status_of(sized) == 413);
    CHECK(serves(node));
}

TEST_CASE("a WebSocket that never says hello is closed, and its slot freed", "[e2e][hostile]") {
    E2eCluster cluster{"hostile-no-hello"};
    auto& node = cluster.start_node("node-1");
    WsClient silent{node.port, "/v1/workers"};
    REQUIRE(E2eCluster::await(
        [&] { return E2eCluster::metric(node, "outboxd_connections_open").value_or(0) >= 1.0; },
        5s));
    const auto refusal = silent.read(15s);
    REQUIRE(refusal);
    CHECK(json::parse(*refusal)["code"] == "hello_required");
    CHECK(silent.await_close(5s) != 0);
    // Only the scrape's own connection is left.
    CHECK(E2eCluster::await(
        [&] { return E2eCluster::metric(node, "outboxd_connections_open").value_or(99) <= 1.0; },
        5s));
}
