#include <catch2/catch.hpp>

#include <algorithm>
#include <memory>

#include "outboxd/worker/worker_registry.hpp"

using namespace outboxd;
using store::Placement;
using store::PlacementMode;
using worker::WorkerRegistry;

namespace {

class NullSink final : public sinks::Sink {
public:
    std::optional<std::string> send_task(const sinks::Task&) override { return std::nullopt; }
    void close(std::string_view) override {}
};

sinks::SinkProfile hello(std::vector<std::string> namespaces, std::int32_t credit,
                         std::optional<std::string> node = std::nullopt,
                         std::vector<std::string> types = {"charge"}) {
    sinks::SinkProfile h;
    h.name = "w";
    h.namespaces = std::move(namespaces);
    h.activity_types = std::move(types);
    h.credit = credit;
    h.node = std::move(node);
    return h;
}

store::OutboxRow row(std::string ns = "default", std::optional<std::string> node = std::nullopt,
                     std::string type = "charge") {
    store::OutboxRow r;
    r.namespace_name = std::move(ns);
    r.task_queue = "default";
    r.activity_type = std::move(type);
    r.node = std::move(node);
    return r;
}

worker::WorkerEntry& add(WorkerRegistry& registry, const std::string& id, sinks::SinkProfile h) {
    return registry.add(id, std::move(h), std::make_shared<NullSink>());
}

Placement unplaced(const std::string& /*ns*/) { return {}; }

std::int32_t capacity_of(const std::vector<worker::Route>& routes, const std::string& ns) {
    std::int32_t total = 0;
    for (const auto& r : routes) {
        if (r.scope.namespace_name == ns) total += r.capacity;
    }
    return total;
}

}  // namespace

TEST_CASE("credit: reserve up to the window, release gives it back", "[unit][worker]") {
    WorkerRegistry registry;
    auto& w = add(registry, "s1", hello({"default"}, 2));
    CHECK(w.free_credit() == 2);
    CHECK(registry.reserve(w));
    CHECK(registry.reserve(w));
    CHECK_FALSE(registry.reserve(w));  // the window is full: nothing changes
    CHECK(w.outstanding() == 2);
    CHECK(w.free_credit() == 0);
    registry.release("s1");
    CHECK(w.free_credit() == 1);
    registry.release("s1");
    registry.release("s1");  // more releases than reserves never go below zero
    CHECK(w.outstanding() == 0);
    registry.release("gone");  // a worker that left: nothing to do
}

TEST_CASE("credit: a smaller window holds new tasks back until the old ones are back",
          "[unit][worker]") {
    WorkerRegistry registry;
    auto& w = add(registry, "s1", hello({"default"}, 4));
    for (int i = 0; i < 4; ++i) REQUIRE(registry.reserve(w));
    registry.set_credit("s1", 1);
    CHECK(w.credit() == 1);
    CHECK(w.free_credit() == 0);
    registry.release("s1");
    registry.release("s1");
    registry.release("s1");
    CHECK(w.free_credit() == 0);  // 1 out, window 1
    registry.release("s1");
    CHECK(w.free_credit() == 1);
    registry.set_credit("s1", -5);  // never a negative window
    CHECK(w.credit() == 0);
}

TEST_CASE("credit: a retired worker (drain) takes nothing new", "[unit][worker]") {
    WorkerRegistry registry;
    auto& w = add(registry, "s1", hello({"default"}, 4));
    registry.retire_all();
    CHECK(w.free_credit() == 0);
    CHECK_FALSE(registry.reserve(w));
    CHECK(registry.routes(unplaced).empty());
    CHECK(registry.pick(row(), {}) == nullptr);
}

TEST_CASE("routes: free credit summed per scope, each worker's credit one pool of its routes",
          "[unit][worker]") {
    WorkerRegistry registry;
    add(registry, "a", hello({"t1", "t2"}, 5));
    add(registry, "b", hello({"t1"}, 3));
    auto& full = add(registry, "c", hello({"t3"}, 1));
    REQUIRE(registry.reserve(full));
    const auto routes = registry.routes(unplaced);
    // a: its 5 for either namespace (one pool); b adds 3 to t1; c has no free credit.
    CHECK(capacity_of(routes, "t1") == 8);
    CHECK(capacity_of(routes, "t2") == 5);
    CHECK(capacity_of(routes, "t3") == 0);
    REQUIRE(routes.size() == 2);  // a and b serve the same t1 scope: one route
    const auto& t1 = routes[0].scope.namespace_name == "t1" ? routes[0] : routes[1];
    const auto& t2 = routes[0].scope.namespace_name == "t1" ? routes[1] : routes[0];
    REQUIRE(t1.pools.size() == 2);
    REQUIRE(t2.pools.size() == 1);
    // t2's pool is one of t1's: a's credit, counted once however many namespaces it serves.
    CHECK((t2.pools[0] == t1.pools[0] || t2.pools[0] == t1.pools[1]));
    CHECK(t2.pools[0].free == 5);
    CHECK(t1.pools[0].id != t1.pools[1].id);
}

TEST_CASE("pick: the least loaded eligible worker, relative to its window", "[unit][worker]") {
    WorkerRegistry registry;
    auto& small = add(registry, "a", hello({"default"}, 2));
    auto& large = add(registry, "b", hello({"default"}, 8));
    add(registry, "c", hello({"other"}, 100));                              // wrong namespace
    add(registry, "d", hello({"default"}, 100, std::nullopt, {"refund"}));  // wrong type
    REQUIRE(registry.reserve(small));                                       // a: 1/2 out
    for (int i = 0; i < 3; ++i) REQUIRE(registry.reserve(large));           // b: 3/8 out
    CHECK(registry.pick(row(), {}) == &large);
    REQUIRE(registry.reserve(large));  // b: 4/8, as loaded as a: the first in order wins
    CHECK(registry.pick(row(), {}) == &small);
    CHECK(registry.pick(row("nobody"), {}) == nullptr);
}

TEST_CASE("pick: a row's node wins over placement; pinned placement waits for its label",
          "[unit][worker]") {
    WorkerRegistry registry;
    auto& eu = add(registry, "eu", hello({"default"}, 4, "eu"));
    auto& plain = add(registry, "plain", hello({"default"}, 4));
    CHECK(registry.pick(row("default", "eu"), {}) == &eu);
    CHECK(registry.pick(row("default", "us"), {}) == nullptr);  // pinned to a label no one has

    const Placement pinned{PlacementMode::pinned, {"eu"}};
    CHECK(registry.pick(row(), pinned) == &eu);
    for (int i = 0; i < 4; ++i) REQUIRE(registry.reserve(eu));
    CHECK(registry.pick(row(), pinned) == nullptr);  // only eu may, and it is full

    const Placement prefer{PlacementMode::prefer, {"eu"}};
    CHECK(registry.pick(row(), prefer) == nullptr);  // eu is up: the rest wait for it
    registry.remove("eu");
    CHECK(registry.pick(row(), prefer) == &plain);  // no preferred worker up: spill over
}
