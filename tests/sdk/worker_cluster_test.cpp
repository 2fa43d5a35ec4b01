// The worker SDK against several scripted nodes: following the cluster from welcome and
// cluster frames, splitting the credit window and rebalancing it, and drains.

#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <memory>
#include <string>

#include "fake_node.hpp"
#include "outboxd/sdk/worker_client.hpp"
#include "sdk_test_support.hpp"

namespace {

using namespace std::chrono_literals;
using namespace outboxd::sdk;
using namespace outboxd::sdk::testing;
namespace protocol = outboxd::worker::protocol;

std::optional<int> hello_credit(const FakeNode& node, std::size_t session) {
    const auto hellos = node.frames_of_type(session, "hello");
    if (hellos.empty()) return std::nullopt;
    return hellos.front()["max_in_flight"].get<int>();
}

// The credit window the worker last announced on `session` (hello, then credit frames).
std::optional<int> current_credit(const FakeNode& node, std::size_t session) {
    std::optional<int> credit;
    for (const auto& frame : node.frames(session)) {
        const auto type = frame.value("type", "");
        if (type == "hello" || type == "credit") credit = frame["max_in_flight"].get<int>();
    }
    return credit;
}

// The window last announced on session 0, read without copying a busy session's frames.
std::optional<int> window(const FakeNode& node) {
    const auto windows = node.credit_windows(0);
    if (windows.empty()) return std::nullopt;
    return windows.back();
}

// Speaks for a node with a backlog on session 0: a task for every credit the worker announced
// and is not using. `answered` counts the tasks of this node the worker has answered.
class Backlog {
public:
    Backlog(FakeNode& node, std::string prefix, const std::atomic<std::size_t>& answered)
        : node_(node), prefix_(std::move(prefix)), answered_(answered) {}

    void top_up() {
        const auto credit = static_cast<std::size_t>(window(node_).value_or(0));
        while (sent_ - answered_.load() < credit) {
            node_.send(0, task_frame(prefix_ + std::to_string(sent_++), "echo"));
        }
    }

private:
    FakeNode& node_;
    const std::string prefix_;
    const std::atomic<std::size_t>& answered_;
    std::size_t sent_ = 0;
};

std::vector<std::string> sorted(std::vector<std::string> urls) {
    std::sort(urls.begin(), urls.end());
    return urls;
}

}  // namespace

TEST_CASE("the client follows the cluster and splits its credit over the nodes", "[sdk]") {
    FakeNode a{"node-a"};
    auto b = std::make_unique<FakeNode>("node-b");
    a.set_welcome_cluster({a.info(), b->info()});
    auto options = test_options({a.url()});
    options.max_in_flight = 11;
    WorkerClient client{options,
                        [](const protocol::Task&, Responder responder) { responder.complete(); }};
    client.start();

    // Alone at first, a gets everything; once b is up the window is split 6 + 5.
    REQUIRE(eventually([&] { return hello_credit(*b, 0).has_value(); }));
    CHECK(hello_credit(a, 0) == 11);
    CHECK(hello_credit(*b, 0) == 5);
    REQUIRE(eventually([&] { return current_credit(a, 0) == 6; }));
    REQUIRE(eventually([&] { return client.connected_urls().size() == 2; }));
    CHECK(sorted(client.connected_urls()) == sorted({a.url(), b->url()}));

    SECTION("a node that goes away gives its share back") {
        const auto b_url = b->url();
        b.reset();
        REQUIRE(eventually([&] { return current_credit(a, 0) == 11; }));
        CHECK(client.connected_urls() == std::vector{a.url()});
        CHECK(client.stats().connected_nodes == 1);
    }

    SECTION("a node no longer listed is dropped and not reconnected") {
        a.send(0, protocol::encode(protocol::Cluster{{a.info()}}));
        REQUIRE(eventually([&] { return current_credit(a, 0) == 11; }));
        REQUIRE(eventually([&] { return !b->is_open(0); }));
        CHECK(client.connected_urls() == std::vector{a.url()});

        // Listed again: connected again, and the window split again.
        a.send(0, protocol::encode(protocol::Cluster{{a.info(), b->info()}}));
        REQUIRE(eventually([&] { return hello_credit(*b, 1).has_value(); }));
        CHECK(b->session_count() == 2);
        CHECK(hello_credit(*b, 1) == 5);
        REQUIRE(eventually([&] { return current_credit(a, 0) == 6; }));
    }
}

TEST_CASE("a node known under a seed URL is not connected twice", "[sdk]") {
    FakeNode a{"node-a"};
    // The node advertises another spelling of its own address.
    const auto localhost_url = "ws://localhost:" + a.url().substr(a.url().rfind(':') + 1);
    a.set_welcome_cluster({{"node-a", localhost_url}});
    WorkerClient client{test_options({a.url()}), [](const protocol::Task&, Responder) {}};
    client.start();
    REQUIRE(eventually([&] { return client.stats().connected_nodes == 1; }));
    // Once the node has the hello, its welcome (which names the node) leaves before anything
    // sent from here: the client knows who it is talking to before the cluster frame comes.
    REQUIRE(eventually([&] { return hello_credit(a, 0).has_value(); }));
    // A cluster frame that also names it does not add a connection either.
    a.send(0, protocol::encode(protocol::Cluster{{{"node-a", localhost_url}}}));
    a.send(0, protocol::encode(protocol::Error{"probe", "sync"}));
    REQUIRE(eventually([&] { return client.stats().errors_received == 1; }));
    CHECK(a.session_count() == 1);
    CHECK(client.connected_urls() == std::vector{a.url()});
}

TEST_CASE("follow_cluster=false stays on the seeds", "[sdk]") {
    FakeNode a{"node-a"};
    FakeNode b{"node-b"};
    a.set_welcome_cluster({a.info(), b.info()});
    auto options = test_options({a.url()});
    options.follow_cluster = false;
    WorkerClient client{options, [](const protocol::Task&, Responder) {}};
    client.start();
    REQUIRE(eventually([&] { return hello_credit(a, 0).has_value(); }));
    a.send(0, protocol::encode(protocol::Error{"probe", "sync"}));
    REQUIRE(eventually([&] { return client.stats().errors_received == 1; }));
    CHECK(b.session_count() == 0);
    CHECK(current_credit(a, 0) == 4);
}

TEST_CASE("a draining node gets no credit, keeps its answers and is not reconnected", "[sdk]") {
    FakeNode a{"node-a"};
    FakeNode b{"node-b"};
    a.set_welcome_cluster({a.info(), b.info()});
    HeldTasks held;
    auto options = test_options({a.url()});
    options.max_in_flight = 10;
    WorkerClient client{options, held.handler()};
    client.start();
    REQUIRE(eventually([&] { return hello_credit(b, 0).has_value(); }));
    REQUIRE(eventually([&] { return current_credit(a, 0) == 5; }));

    b.send(0, task_frame("t1", "echo"));
    REQUIRE(eventually([&] { return held.size() == 1; }));
    b.send(0, protocol::encode(protocol::Drain{}));
    // b's task still counts: a gets the rest of the window once b's node must have stopped
    // acting on its credit.
    REQUIRE(eventually([&] { return current_credit(a, 0) == 9; }));

    // In-flight work of the draining node is still answered there; then a gets it all.
    held.take(0).complete(R"("done")");
    REQUIRE(eventually([&] { return client.stats().tasks_completed == 1; }));
    REQUIRE(eventually([&] { return !b.frames_of_type(0, "complete").empty(); }));
    REQUIRE(eventually([&] { return current_credit(a, 0) == 10; }));

    // It goes away; while it is still listed the client does not come back to it.
    b.close(0);
    REQUIRE(eventually([&] { return client.connected_urls() == std::vector{a.url()}; }));
    a.send(0, protocol::encode(protocol::Cluster{{a.info(), b.info()}}));
    std::this_thread::sleep_for(3 * options.reconnect_max);  // room for a wrong reconnect
    CHECK(b.session_count() == 1);

    // Once it has left the list and reappears (say, restarted), the client reconnects.
    a.send(0, protocol::encode(protocol::Cluster{{a.info()}}));
    a.send(0, protocol::encode(protocol::Cluster{{a.info(), b.info()}}));
    REQUIRE(eventually([&] { return hello_credit(b, 1).has_value(); }));
    CHECK(hello_credit(b, 1) == 5);
    REQUIRE(eventually([&] { return current_credit(a, 0) == 5; }));
}

TEST_CASE("a drained seed is reconnected after backoff", "[sdk]") {
    FakeNode a{"node-a"};
    WorkerClient client{test_options({a.url()}), [](const protocol::Task&, Responder) {}};
    client.start();
    REQUIRE(eventually([&] { return hello_credit(a, 0).has_value(); }));
    a.send(0, protocol::encode(protocol::Drain{}));
    a.close(0);
    REQUIRE(eventually([&] { return hello_credit(a, 1).has_value(); }));
    CHECK(hello_credit(a, 1) == 4);
}

TEST_CASE("credit moves to the node with a backlog, and back when the other gets work", "[sdk]") {
    FakeNode a{"node-a"};
    FakeNode b{"node-b"};
    a.set_welcome_cluster({a.info(), b.info()});
    std::atomic<std::size_t> answered_a{0};
    std::atomic<std::size_t> answered_b{0};
    auto options = test_options({a.url()});
    options.max_in_flight = 10;
    options.rebalance_interval = 50ms;
    WorkerClient client{options, [&](const protocol::Task& task, Responder responder) {
                            responder.complete();
                            ++(task.task_id.front() == 'a' ? answered_a : answered_b);
                        }};
    client.start();
    REQUIRE(eventually([&] { return window(a) == 5 && window(b) == 5; }));

    // A refills whatever the worker answers; B sends nothing. A's window keeps turning over,
    // so A gets everything but B's floor.
    Backlog backlog_a{a, "a-", answered_a};
    Backlog backlog_b{b, "b-", answered_b};
    REQUIRE(eventually(
        [&] {
            backlog_a.top_up();
            return window(a) == 9 && window(b) == 1;
        },
        3s));
    CHECK(answered_b == 0);

    // B gets a backlog too: from its single credit it still shows one, and the split moves
    // back to even.
    REQUIRE(eventually(
        [&] {
            backlog_a.top_up();
            backlog_b.top_up();
            return window(a) == 5 && window(b) == 5;
        },
        3s));
    CHECK(answered_b > 0);
    CHECK(client.stats().tasks_failed == 0);
    CHECK(client.stats().connected_nodes == 2);
}

TEST_CASE("rebalance_interval 0 keeps the even split under any load", "[sdk]") {
    FakeNode a{"node-a"};
    FakeNode b{"node-b"};
    a.set_welcome_cluster({a.info(), b.info()});
    std::atomic<std::size_t> answered_a{0};
    auto options = test_options({a.url()});
    options.max_in_flight = 10;
    options.rebalance_interval = 0ms;
    WorkerClient client{options, [&](const protocol::Task&, Responder responder) {
                            responder.complete();
                            ++answered_a;
                        }};
    client.start();
    REQUIRE(eventually([&] { return window(a) == 5 && window(b) == 5; }));

    Backlog backlog_a{a, "a-", answered_a};
    // A backlog on a until it has been served a while and the client moved its credit.
    REQUIRE(eventually([&] {
        backlog_a.top_up();
        return answered_a > 10 && a.credit_windows(0).size() >= 2;
    }));
    // Alone at first, then half; nothing moves after that.
    CHECK(a.credit_windows(0) == std::vector{10, 5});
    CHECK(b.credit_windows(0) == std::vector{5});
}
