// Engines on real databases, as a node wires them, with a sink of the tests' own attached
// through the node's one SinkPort (the directory): a third kind of sink needs nothing but its
// own file (memory_sink.hpp), and a second database nothing but a second engine.

#include <catch2/catch.hpp>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <prometheus/registry.h>

#include "loop_wait.hpp"
#include "memory_sink.hpp"
#include "outboxd/engine/engine_directory.hpp"
#include "store_fixture.hpp"

using namespace outboxd;
using namespace std::chrono_literals;
using test::new_row;

namespace {

struct Node {
    // One engine per database, in this order.
    explicit Node(const std::vector<const test::TestDatabase*>& databases) {
        for (const auto* db : databases) {
            engine::EngineSettings s;
            s.name = db->name();
            s.database_url = db->url();
            s.dispatch.poll_interval = 50ms;
            s.dispatch.task_id_suffix = engines.next_task_id_suffix();
            s.maintenance.reconcile_interval = 200ms;
            s.member = {"node-a", "node-a/boot-1", "ws://127.0.0.1:1/v1/workers", 2000ms};
            s.settings_refresh = 100ms;
            engines.add(std::make_unique<engine::OutboxEngine>(
                engine::EngineContext{ioc.get_executor(), registry, metrics, engines}, s));
        }
        engines.start();
    }
    ~Node() {
        // What a test left out is given up at once (a drain would wait for it).
        engines.abandon_outstanding("the test is over");
        bool drained = false;
        engines.drain([&] { drained = true; });
        run_until([&] { return drained; });
        engines.stop();
        ioc.restart();
        ioc.poll();
    }

    bool run_until(const std::function<bool()>& done) {
        return test::run_until(ioc, done, std::chrono::seconds{20});
    }

    boost::asio::io_context ioc{1};
    prometheus::Registry prometheus_registry;
    metrics::NodeMetrics metrics{prometheus_registry};
    worker::WorkerRegistry registry;
    engine::EngineDirectory engines{registry};
};

sinks::SinkProfile charger(std::int32_t credit) {
    sinks::SinkProfile profile;
    profile.name = "memory";
    profile.activity_types = {"charge"};
    profile.credit = credit;
    return profile;
}

std::int64_t count_done(const test::TestDatabase& db) {
    return db.exec("SELECT count(*) FROM outbox WHERE status = 'done'")[0][0].as<std::int64_t>();
}

}  // namespace

TEST_CASE("a sink attached through the port gets tasks and its answers land", "[pg][engine]") {
    test::TestDatabase db;
    test::TestStore store{db.url()};
    store.append(std::vector{new_row("a", 0), new_row("a", 1), new_row("b", 0)});
    Node node({&db});
    auto sink = std::make_shared<test::MemorySink>();
    node.engines.attach("m1", charger(10), sink);
    REQUIRE(node.run_until([&] { return sink->tasks().size() == 3; }));
    for (const auto& task : sink->tasks()) {
        CHECK(node.engines.complete("m1", task["task_id"].get<std::string>(), R"({"ok":1})") ==
              sinks::Answer::accepted);
    }
    REQUIRE(node.run_until([&] { return count_done(db) == 3; }));
    CHECK(store.find("a:0")->result_json == R"({"ok": 1})");
    // Detached: what it would send now is nobody's.
    node.engines.detach("m1");
    CHECK(node.registry.find("m1") == nullptr);
}

TEST_CASE("one directory serves two databases: each answer reaches the one that claimed it",
          "[pg][engine]") {
    test::TestDatabase orders;
    test::TestDatabase billing;
    test::TestStore{orders.url()}.append(std::vector{new_row("o", 0), new_row("o", 1)});
    test::TestStore{billing.url()}.append(std::vector{new_row("b", 0)});
    Node node({&orders, &billing});
    auto sink = std::make_shared<test::MemorySink>();
    node.engines.attach("m1", charger(10), sink);
    REQUIRE(node.run_until([&] { return sink->tasks().size() == 3; }));

    std::vector<std::string> plain;
    std::vector<std::string> second;
    for (const auto& task : sink->tasks()) {
        const auto id = task["task_id"].get<std::string>();
        (id.ends_with("@1") ? second : plain).push_back(id);
    }
    // The first database keeps the wire's task ids; the second's name their database.
    CHECK(plain.size() == 2);
    CHECK(second.size() == 1);
    // An id naming a database this node does not serve is no task of any.
    CHECK(node.engines.complete("m1", plain[0] + "@7", "null") == sinks::Answer::unknown_task);
    CHECK(node.engines.complete("m1", plain[0] + "@x", "null") == sinks::Answer::unknown_task);
    for (const auto& id : plain)
        CHECK(node.engines.complete("m1", id, "null") == sinks::Answer::accepted);
    CHECK(node.engines.fail("m1", second[0], "declined", false, {}) == sinks::Answer::accepted);
    REQUIRE(node.run_until([&] { return count_done(orders) == 2; }));
    REQUIRE(node.run_until([&] {
        return billing.exec("SELECT count(*) FROM outbox WHERE status = 'failed'")[0][0]
                   .as<std::int64_t>() == 1;
    }));
    CHECK(count_done(billing) == 0);
}

TEST_CASE("a sink that detaches with tasks out has them re-armed in every database",
          "[pg][engine]") {
    test::TestDatabase orders;
    test::TestDatabase billing;
    test::TestStore{orders.url()}.append(std::vector{new_row("o", 0)});
    test::TestStore{billing.url()}.append(std::vector{new_row("b", 0)});
    Node node({&orders, &billing});
    auto first = std::make_shared<test::MemorySink>();
    node.engines.attach("m1", charger(10), first);
    REQUIRE(node.run_until([&] { return first->tasks().size() == 2; }));
    node.engines.detach("m1");
    // Re-armed at once, attempt used: another sink gets both again.
    auto second = std::make_shared<test::MemorySink>();
    node.engines.attach("m2", charger(10), second);
    REQUIRE(node.run_until([&] { return second->tasks().size() == 2; }));
    for (const auto& task : second->tasks()) CHECK(task["attempt"] == 2);
}
