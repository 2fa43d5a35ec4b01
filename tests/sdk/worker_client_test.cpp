// The worker SDK against one scripted node: the hello it sends, tasks and their answers,
// error frames, reconnecting, and stopping with tasks in flight.

#include <catch2/catch.hpp>

#include <atomic>
#include <future>
#include <map>
#include <stdexcept>

#include "fake_node.hpp"
#include "outboxd/sdk/worker_client.hpp"
#include "sdk_test_support.hpp"

namespace {

using namespace std::chrono_literals;
using namespace outboxd::sdk;
using namespace outboxd::sdk::testing;
namespace protocol = outboxd::worker::protocol;

// The first answer (complete or fail) the node received for `task_id` on `session`.
std::optional<nlohmann::json> answer_for(const FakeNode& node, std::size_t session,
                                         const std::string& task_id) {
    for (const auto& frame : node.frames(session)) {
        const auto type = frame.value("type", "");
        if ((type == "complete" || type == "fail") && frame.value("task_id", "") == task_id) {
            return frame;
        }
    }
    return std::nullopt;
}

std::size_t answers_for(const FakeNode& node, std::size_t session, const std::string& task_id) {
    std::size_t count = 0;
    for (const auto& frame : node.frames(session)) {
        const auto type = frame.value("type", "");
        if ((type == "complete" || type == "fail") && frame.value("task_id", "") == task_id) {
            ++count;
        }
    }
    return count;
}

bool has_hello(const FakeNode& node, std::size_t session) {
    return !node.frames_of_type(session, "hello").empty();
}

}  // namespace

TEST_CASE("the first frame is a hello describing the worker, with the bearer token", "[sdk]") {
    FakeNode node;
    auto options = test_options({node.url()});
    options.worker_id = "w-1";
    options.namespaces = {"billing", "default"};
    options.task_queue = "fast";
    options.node = "eu-1";
    options.activity_types = {"charge", "refund"};
    options.max_in_flight = 7;
    options.token = "s3cret";
    WorkerClient client{options, [](const protocol::Task&, Responder) {}};
    client.start();

    REQUIRE(eventually([&] { return has_hello(node, 0); }));
    const auto first = node.frames(0).front();
    CHECK(first["type"] == "hello");
    CHECK(first["worker_id"] == "w-1");
    CHECK(first["namespaces"] == nlohmann::json({"billing", "default"}));
    CHECK(first["task_queue"] == "fast");
    CHECK(first["node"] == "eu-1");
    CHECK(first["activity_types"] == nlohmann::json({"charge", "refund"}));
    CHECK(first["max_in_flight"] == 7);
    CHECK(node.authorization(0) == std::optional<std::string>{"Bearer s3cret"});

    REQUIRE(eventually([&] { return client.connected_urls() == std::vector{node.url()}; }));
    CHECK(client.stats().connected_nodes == 1);
    client.stop(0ms);
    CHECK(client.connected_urls().empty());
}

TEST_CASE("without a token the upgrade carries no Authorization header", "[sdk]") {
    FakeNode node;
    WorkerClient client{test_options({node.url()}), [](const protocol::Task&, Responder) {}};
    client.start();
    REQUIRE(eventually([&] { return has_hello(node, 0); }));
    CHECK_FALSE(node.authorization(0).has_value());
    CHECK(node.frames(0).front()["node"].is_null());
}

TEST_CASE("a task reaches the handler and its answer returns once, on its connection", "[sdk]") {
    FakeNode node;
    std::mutex mutex;
    std::vector<protocol::Task> seen;
    WorkerClient client{test_options({node.url()}),
                        [&](const protocol::Task& task, Responder responder) {
                            {
                                const std::lock_guard lock{mutex};
                                seen.push_back(task);
                            }
                            responder.complete(task.input_json);
                            responder.fail("too late", false);  // ignored: already answered
                            responder.complete("1");            // ignored too
                        }};
    client.start();
    REQUIRE(eventually([&] { return has_hello(node, 0); }));

    node.send(0, task_frame("t1", "echo", R"({"x":[1,2]})", 3));
    node.send(0, task_frame("t2", "echo", R"("second")"));
    REQUIRE(eventually([&] { return answer_for(node, 0, "t2").has_value(); }));

    const auto answer = answer_for(node, 0, "t1");
    REQUIRE(answer.has_value());
    CHECK((*answer)["type"] == "complete");
    CHECK((*answer)["result"] == nlohmann::json::parse(R"({"x":[1,2]})"));
    // Answers travel in order on one connection: t2's answer came after any second one of t1.
    CHECK(answers_for(node, 0, "t1") == 1);
    {
        const std::lock_guard lock{mutex};
        REQUIRE(seen.size() == 2);
        CHECK(seen[0].dispatch_key == "wf-t1:0");
        CHECK(seen[0].attempt == 3);
        CHECK(seen[0].activity_type == "echo");
    }
    REQUIRE(eventually([&] { return client.stats().tasks_completed == 2; }));
    const auto stats = client.stats();
    CHECK(stats.tasks_received == 2);
    CHECK(stats.tasks_failed == 0);
    CHECK(stats.tasks_in_flight == 0);
}

TEST_CASE("the handler gets the database of each task, default where the node names none",
          "[sdk]") {
    FakeNode node;
    std::mutex mutex;
    std::vector<std::string> databases;
    WorkerClient client{test_options({node.url()}), [&](const Task& task, Responder responder) {
                            {
                                const std::lock_guard lock{mutex};
                                databases.push_back(task.database);
                            }
                            responder.complete();
                        }};
    client.start();
    REQUIRE(eventually([&] { return has_hello(node, 0); }));
    // A node with several databases names each task's; an older one names none.
    // The frames as a node encodes them name "default"; named otherwise, or not at all.
    const std::string named_default = R"("database":"default",)";
    const auto in_database = [&](std::string frame, const std::string& database) {
        const auto at = frame.find(named_default);
        return frame.replace(at, named_default.size(), R"("database":")" + database + R"(",)");
    };
    const auto unnamed = [&](std::string frame) {
        return frame.erase(frame.find(named_default), named_default.size());
    };
    node.send(0, in_database(task_frame("t1", "echo"), "orders"));
    node.send(0, unnamed(task_frame("t2", "echo", R"({"database":"input, not the task's"})")));
    const std::string members[] = {in_database(task_frame("t3", "echo"), "billing"),
                                   unnamed(task_frame("t4", "echo"))};
    node.send(0, protocol::encode_batch(members));
    REQUIRE(eventually([&] { return client.stats().tasks_completed == 4; }));
    const std::lock_guard lock{mutex};
    CHECK(databases == std::vector<std::string>{"orders", "default", "billing", "default"});
}

TEST_CASE("a Responder destroyed unanswered fails its task as retryable", "[sdk]") {
    FakeNode node;
    WorkerClient client{test_options({node.url()}), [](const protocol::Task&, Responder) {}};
    client.start();
    REQUIRE(eventually([&] { return has_hello(node, 0); }));

    node.send(0, task_frame("t1", "echo"));
    REQUIRE(eventually([&] { return answer_for(node, 0, "t1").has_value(); }));
    const auto answer = *answer_for(node, 0, "t1");
    CHECK(answer["type"] == "fail");
    CHECK(answer["retryable"] == true);
    CHECK(answer["error"] == "abandoned by worker");
}

TEST_CASE("a handler that throws fails its task instead of taking the client down", "[sdk]") {
    FakeNode node;
    WorkerClient client{test_options({node.url()}), [](const protocol::Task&, Responder) {
                            throw std::runtime_error("handler bug");
                        }};
    client.start();
    REQUIRE(eventually([&] { return has_hello(node, 0); }));
    node.send(0, task_frame("t1", "echo"));
    REQUIRE(eventually([&] { return answer_for(node, 0, "t1").has_value(); }));
    CHECK((*answer_for(node, 0, "t1"))["type"] == "fail");
    CHECK(node.is_open(0));
}

TEST_CASE("Responders answer from any thread and invalid result JSON fails the task", "[sdk]") {
    FakeNode node;
    HeldTasks held;
    WorkerClient client{test_options({node.url()}), held.handler()};
    client.start();
    REQUIRE(eventually([&] { return has_hello(node, 0); }));
    node.send(0, task_frame("t1", "echo"));
    node.send(0, task_frame("t2", "echo"));
    REQUIRE(eventually([&] { return held.size() == 2; }));

    std::thread{[first = held.take(0)]() mutable { first.fail("card declined", false); }}.join();
    std::thread{[second = held.take(1)]() mutable { second.complete("{not json"); }}.join();

    REQUIRE(eventually([&] { return answer_for(node, 0, "t2").has_value(); }));
    const auto first = *answer_for(node, 0, "t1");
    CHECK(first["type"] == "fail");
    CHECK(first["error"] == "card declined");
    CHECK(first["retryable"] == false);
    const auto second = *answer_for(node, 0, "t2");
    CHECK(second["type"] == "fail");
    CHECK(second["retryable"] == false);
}

TEST_CASE("error frames and unusable frames are counted, not fatal", "[sdk]") {
    FakeNode node;
    WorkerClient client{test_options({node.url()}),
                        [](const protocol::Task&, Responder responder) { responder.complete(); }};
    client.start();
    REQUIRE(eventually([&] { return has_hello(node, 0); }));

    node.send(0, protocol::encode(protocol::Error{"unknown_task", "no task 'zz'"}));
    node.send(0, "{not json");
    node.send(0, R"({"type":"surprise"})");
    REQUIRE(eventually([&] {
        const auto stats = client.stats();
        return stats.errors_received == 1 && stats.frames_invalid == 2;
    }));
    node.send(0, task_frame("t1", "echo"));
    REQUIRE(eventually([&] { return answer_for(node, 0, "t1").has_value(); }));
    CHECK(node.session_count() == 1);
    CHECK(client.stats().connected_nodes == 1);
}

TEST_CASE("the client reconnects after the node drops the connection", "[sdk]") {
    FakeNode node;
    HeldTasks held;
    WorkerClient client{test_options({node.url()}), held.handler()};
    client.start();
    REQUIRE(eventually([&] { return has_hello(node, 0); }));
    node.send(0, task_frame("t1", "echo"));
    REQUIRE(eventually([&] { return held.size() == 1; }));

    node.drop(0);
    REQUIRE(eventually([&] { return node.session_count() == 2 && has_hello(node, 1); }));
    CHECK(node.frames(1).front()["max_in_flight"] == 4);
    CHECK(client.stats().reconnects >= 1);
    REQUIRE(eventually([&] { return client.stats().tasks_in_flight == 0; }));

    // The task's connection is gone (the node re-arms it): its answer goes nowhere.
    held.take(0).complete();
    REQUIRE(eventually([&] { return client.stats().answers_dropped == 1; }));
    CHECK_FALSE(answer_for(node, 1, "t1").has_value());
    CHECK(client.stats().tasks_completed == 0);
}

TEST_CASE("the client keeps retrying a node that is not there yet", "[sdk]") {
    std::string url;
    {
        FakeNode gone;  // reserve a port, then free it: nobody listens there
        url = gone.url();
    }
    WorkerClient client{test_options({url}), [](const protocol::Task&, Responder) {}};
    client.start();
    REQUIRE(eventually([&] { return client.stats().reconnects >= 3; }));
    CHECK(client.connected_urls().empty());
    const auto before = std::chrono::steady_clock::now();
    client.stop(5s);
    CHECK(std::chrono::steady_clock::now() - before < 2s);
}

TEST_CASE("stop() gives in-flight tasks the grace period, then fails the rest", "[sdk]") {
    FakeNode node;
    HeldTasks held;
    WorkerClient client{test_options({node.url()}), held.handler()};
    client.start();
    REQUIRE(eventually([&] { return has_hello(node, 0); }));
    node.send(0, task_frame("t1", "echo"));
    node.send(0, task_frame("t2", "echo"));
    REQUIRE(eventually([&] { return held.size() == 2; }));

    auto stopped = std::async(std::launch::async, [&] { client.stop(400ms); });
    // Credit 0 comes first; an answer given during the grace period still goes out.
    REQUIRE(eventually([&] {
        const auto credits = node.frames_of_type(0, "credit");
        return !credits.empty() && credits.back()["max_in_flight"] == 0;
    }));
    held.take(0).complete(R"("in time")");
    REQUIRE(stopped.wait_for(5s) == std::future_status::ready);
    stopped.get();

    REQUIRE(eventually([&] { return answer_for(node, 0, "t2").has_value(); }));
    const auto in_time = *answer_for(node, 0, "t1");
    CHECK(in_time["type"] == "complete");
    CHECK(in_time["result"] == "in time");
    const auto cut = *answer_for(node, 0, "t2");
    CHECK(cut["type"] == "fail");
    CHECK(cut["retryable"] == true);
    CHECK(cut["error"] == "worker stopping");
    REQUIRE(eventually([&] { return !node.is_open(0); }));

    // Too late: already failed by stop(); ignored.
    held.take(1).complete();
    const auto stats = client.stats();
    CHECK(stats.tasks_completed == 1);
    CHECK(stats.tasks_failed == 1);
    CHECK(stats.tasks_in_flight == 0);
    CHECK(answers_for(node, 0, "t2") == 1);
    client.stop(0ms);  // idempotent
}

TEST_CASE("stop() without tasks in flight returns at once and stop before start is a no-op",
          "[sdk]") {
    FakeNode node;
    {
        WorkerClient never_started{test_options({node.url()}),
                                   [](const protocol::Task&, Responder) {}};
        never_started.stop(1s);
    }
    WorkerClient client{test_options({node.url()}), [](const protocol::Task&, Responder) {}};
    client.start();
    REQUIRE(eventually([&] { return client.stats().connected_nodes == 1; }));
    const auto before = std::chrono::steady_clock::now();
    client.stop(10s);
    CHECK(std::chrono::steady_clock::now() - before < 2s);
    REQUIRE(eventually([&] { return !node.is_open(0); }));
    const auto credits = node.frames_of_type(0, "credit");
    REQUIRE(credits.size() == 1);
    CHECK(credits[0]["max_in_flight"] == 0);
}

TEST_CASE("options that cannot work are refused, naming the option", "[sdk]") {
    const auto refuses = [](WorkerOptions options, const std::string& option) {
        try {
            WorkerClient client{std::move(options), [](const protocol::Task&, Responder) {}};
        } catch (const std::invalid_argument& error) {
            return std::string{error.what()}.find(option) != std::string::npos;
        }
        return false;
    };
    CHECK(refuses(test_options({}), "seed_urls"));
    CHECK(refuses(test_options({"http://127.0.0.1:1/v1/workers"}), "seed_urls"));
    CHECK(refuses(test_options({"ws://127.0.0.1:99999/v1/workers"}), "seed_urls"));
    auto options = test_options({"ws://127.0.0.1:1/v1/workers"});
    options.max_in_flight = 0;
    CHECK(refuses(options, "max_in_flight"));
    options = test_options({"ws://127.0.0.1:1/v1/workers"});
    options.activity_types.clear();
    CHECK(refuses(options, "activity_types"));
    options = test_options({"ws://127.0.0.1:1/v1/workers"});
    options.worker_id.clear();
    CHECK(refuses(options, "worker_id"));
    options = test_options({"ws://127.0.0.1:1/v1/workers"});
    options.rebalance_interval = std::chrono::milliseconds{-1};
    CHECK(refuses(options, "rebalance_interval"));
}

TEST_CASE("with a node that reads batches, tasks come in batches and answers leave in them",
          "[sdk]") {
    FakeNode node;
    node.set_welcome_batch(4096);
    std::atomic<int> handled{0};
    WorkerClient client{test_options({node.url()}),
                        [&](const protocol::Task& task, Responder responder) {
                            ++handled;
                            if (task.task_id == "t-7") return responder.fail("no", false);
                            responder.complete();
                        }};
    client.start();
    REQUIRE(eventually([&] { return has_hello(node, 0); }));
    CHECK(node.frames_of_type(0, "hello").at(0)["batch"] == true);

    std::vector<std::string> tasks;
    for (int i = 0; i < 60; ++i) tasks.push_back(task_frame("t-" + std::to_string(i), "echo"));
    node.send(0, protocol::encode_batch(tasks));

    // Every answer arrives once, in a batch frame or alone; none of the batches is larger
    // than the node said it reads.
    std::map<std::string, std::string> answers;
    std::size_t batches = 0;
    REQUIRE(eventually([&] {
        answers.clear();
        batches = 0;
        for (const auto& frame : node.frames(0)) {
            if (!frame.is_object()) continue;
            std::vector<nlohmann::json> members{frame};
            if (frame["type"] == "batch") {
                ++batches;
                CHECK(frame.dump().size() <= 4096);
                members = frame["frames"].get<std::vector<nlohmann::json>>();
            }
            for (const auto& member : members) {
                if (member["type"] != "complete" && member["type"] != "fail") continue;
                CHECK(answers.emplace(member["task_id"], member["type"]).second);
            }
        }
        return answers.size() == 60;
    }));
    CHECK(handled == 60);
    CHECK(batches >= 1);
    CHECK(answers.at("t-7") == "fail");
    CHECK(answers.at("t-8") == "complete");
    REQUIRE(eventually([&] { return client.stats().tasks_completed == 59; }));
    CHECK(client.stats().frames_invalid == 0);
}

TEST_CASE("batch_frames = false asks for no batches and answers one frame each", "[sdk]") {
    FakeNode node;
    node.set_welcome_batch(4096);
    auto options = test_options({node.url()});
    options.batch_frames = false;
    WorkerClient client{options,
                        [](const protocol::Task&, Responder responder) { responder.complete(); }};
    client.start();
    REQUIRE(eventually([&] { return has_hello(node, 0); }));
    CHECK_FALSE(node.frames_of_type(0, "hello").at(0).contains("batch"));
    for (int i = 0; i < 20; ++i) node.send(0, task_frame("t-" + std::to_string(i), "echo"));
    REQUIRE(eventually([&] { return node.frames_of_type(0, "complete").size() == 20; }));
    CHECK(node.frames_of_type(0, "batch").empty());
}
