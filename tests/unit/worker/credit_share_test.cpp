// One sink's credit window shared by the databases of a node (worker::WorkerRegistry):
// alone, a database uses the whole window; while several have due work, each holds at most
// its fair share, the remainder taking turns; a connection never holds more than its window.

#include <algorithm>
#include <map>
#include <random>
#include <vector>

#include <catch2/catch.hpp>

#include "outboxd/worker/worker_registry.hpp"

using namespace outboxd;
using worker::WorkerEntry;
using worker::WorkerRegistry;

namespace {

WorkerEntry& attach(WorkerRegistry& registry, std::int32_t credit) {
    sinks::SinkProfile profile;
    profile.activity_types = {"charge"};
    profile.credit = credit;
    return registry.add("s1", std::move(profile), nullptr);
}

// Takes for `db` everything its share allows now; returns how many.
int take_all(WorkerRegistry& registry, WorkerEntry& worker, std::size_t db) {
    int taken = 0;
    while (registry.free_for(worker, db) > 0) {
        REQUIRE(registry.reserve(worker, db));
        ++taken;
    }
    return taken;
}

}  // namespace

TEST_CASE("one database, or one wanting, uses the whole window", "[unit][worker][credit]") {
    WorkerRegistry registry;
    auto& worker = attach(registry, 8);
    CHECK(registry.free_for(worker, 0) == 8);  // databases not set: one
    registry.set_databases({"a", "b", "c"});
    CHECK(registry.free_for(worker, 0) == 8);  // nobody else wants
    registry.want(1, true);
    CHECK(registry.free_for(worker, 1) == 8);  // only it wants
    CHECK(take_all(registry, worker, 1) == 8);
    CHECK(worker.outstanding() == 8);
    CHECK(worker.held(1) == 8);
}

TEST_CASE("a database looking for work holds back one credit, not a share",
          "[unit][worker][credit]") {
    using Want = WorkerRegistry::Want;
    WorkerRegistry registry;
    registry.set_databases({"busy", "q1", "q2", "q3"});
    std::vector<std::size_t> freed_for;
    registry.on_freed([&](std::size_t db) { freed_for.push_back(db); });
    auto& worker = attach(registry, 8);
    registry.want(0, true);
    REQUIRE(take_all(registry, worker, 0) == 8);
    // Three quiet databases poll: each wants a look.
    for (std::size_t db = 1; db <= 3; ++db) registry.want(db, Want::look);
    // The busy one ends two tasks: both go to looks, none to it.
    registry.release("s1", 0);
    registry.release("s1", 0);
    CHECK(registry.free_for(worker, 0) == 0);
    CHECK(registry.free_for(worker, 1) == 2);  // a look may take what is free
    CHECK(freed_for == std::vector<std::size_t>{0, 0});
    // Two look and find nothing: the busy one has the rest of the window again, less the one
    // credit the third still looks with.
    REQUIRE(registry.reserve(worker, 1));
    REQUIRE(registry.reserve(worker, 2));
    registry.release("s1", 1);
    registry.release("s1", 2);
    registry.want(1, Want::none);
    registry.want(2, Want::none);
    CHECK(registry.free_for(worker, 0) == 1);
    registry.want(3, Want::none);
    CHECK(registry.free_for(worker, 0) == 2);
    // Had they wanted shares, the busy one would have been held to a quarter of the window.
    for (std::size_t db = 1; db <= 3; ++db) registry.want(db, true);
    CHECK(registry.free_for(worker, 0) == 0);
    // A look that finds work comes back full and wants a share: the usual fair split.
    registry.want(1, false);
    registry.want(2, false);
    registry.want(3, false);
    registry.want(1, Want::look);
    CHECK(registry.wanted(1) == Want::look);
    registry.want(1, true);
    CHECK(registry.wanted(1) == Want::share);
    CHECK(registry.free_for(worker, 1) == 2);  // its share is 4; 2 credits are free
}

TEST_CASE("a busy database gives way to a quiet one as its tasks come back",
          "[unit][worker][credit]") {
    WorkerRegistry registry;
    registry.set_databases({"a", "b"});
    std::vector<std::size_t> freed_for;
    registry.on_freed([&](std::size_t db) { freed_for.push_back(db); });
    auto& worker = attach(registry, 8);
    registry.want(0, true);
    REQUIRE(take_all(registry, worker, 0) == 8);
    // The quiet database gets a wake: its share is 4, but the window is full.
    registry.want(1, true);
    CHECK(registry.free_for(worker, 1) == 0);
    CHECK(registry.free_for(worker, 0) == 0);
    // Each task the busy one ends goes to the quiet one, up to its share.
    for (int i = 0; i < 4; ++i) {
        registry.release("s1", 0);
        CHECK(registry.free_for(worker, 0) == 0);  // over its share of 4 still
        CHECK(registry.free_for(worker, 1) == 1);
        REQUIRE(registry.reserve(worker, 1));
    }
    CHECK(worker.held(0) == 4);
    CHECK(worker.held(1) == 4);
    CHECK(freed_for.size() == 4);  // the quiet one was told each time
    // Now at its share, the busy one gets back what it ends.
    registry.release("s1", 0);
    CHECK(registry.free_for(worker, 1) == 0);
    CHECK(registry.free_for(worker, 0) == 1);
    // The quiet one drained its due rows: the whole window is the busy one's again.
    registry.want(1, false);
    CHECK(worker.outstanding() == 7);
    CHECK(registry.free_for(worker, 0) == 1);  // all that is free of the window
}

TEST_CASE("over many turns, databases that all want share a window evenly and never exceed it",
          "[unit][worker][credit]") {
    for (const std::int32_t window : {1, 2, 3, 8, 16}) {
        for (const std::size_t databases : {2U, 3U, 5U}) {
            DYNAMIC_SECTION("window " << window << ", " << databases << " databases") {
                WorkerRegistry registry;
                std::vector<std::string> names;
                for (std::size_t i = 0; i < databases; ++i) names.push_back(std::to_string(i));
                registry.set_databases(names);
                auto& worker = attach(registry, window);
                std::vector<std::size_t> pending;  // the database of each task out
                std::vector<int> served(databases, 0);
                std::mt19937 random{7};
                for (std::size_t db = 0; db < databases; ++db) registry.want(db, true);
                for (int step = 0; step < 6000; ++step) {
                    // Each database claims what its share allows, in a changing order.
                    const auto first = static_cast<std::size_t>(random() % databases);
                    for (std::size_t k = 0; k < databases; ++k) {
                        const auto db = (first + k) % databases;
                        const int taken = take_all(registry, worker, db);
                        served[db] += taken;
                        pending.insert(pending.end(), static_cast<std::size_t>(taken), db);
                    }
                    REQUIRE(worker.outstanding() <= window);
                    REQUIRE(static_cast<std::int32_t>(pending.size()) == worker.outstanding());
                    // One task (any of them) ends.
                    REQUIRE_FALSE(pending.empty());
                    const auto it =
                        pending.begin() + static_cast<std::ptrdiff_t>(random() % pending.size());
                    registry.release("s1", *it);
                    pending.erase(it);
                }
                const auto [least, most] = std::minmax_element(served.begin(), served.end());
                INFO("tasks served per database: least " << *least << ", most " << *most);
                CHECK(*least > 0);
                // Even within a fifth (the remainder of a small window goes round).
                CHECK(static_cast<double>(*least) >= 0.8 * static_cast<double>(*most));
            }
        }
    }
}

TEST_CASE("routes and picks follow the database's share", "[unit][worker][credit]") {
    WorkerRegistry registry;
    registry.set_databases({"a", "b"});
    auto& worker = attach(registry, 6);
    const worker::PlacementLookup unplaced = [](const std::string&) { return store::Placement{}; };
    registry.want(0, true);
    registry.want(1, true);
    REQUIRE(registry.routes(unplaced, 0).size() == 1);
    CHECK(registry.routes(unplaced, 0).front().capacity == 3);
    CHECK(registry.routes(unplaced, 1).front().capacity == 3);
    REQUIRE(registry.reserve(worker, 0));
    CHECK(registry.routes(unplaced, 0).front().capacity == 2);
    CHECK(registry.routes(unplaced, 1).front().capacity == 3);
    store::OutboxRow row;
    row.namespace_name = "default";
    row.task_queue = "default";
    row.activity_type = "charge";
    CHECK(registry.pick(row, {}, 1) == &worker);
    // Over its share, a row already claimed still goes where credit is free.
    REQUIRE(registry.reserve(worker, 0));
    REQUIRE(registry.reserve(worker, 0));
    CHECK(registry.routes(unplaced, 0).empty());
    CHECK(registry.pick(row, {}, 0) == &worker);
}

TEST_CASE("a sink bound to one database takes none of another's", "[unit][worker][credit]") {
    WorkerRegistry registry;
    registry.set_databases({"orders", "billing"});
    sinks::SinkProfile profile;
    profile.activity_types = {"charge"};
    profile.credit = 4;
    profile.database = "billing";
    auto& target = registry.add("http-target", profile, nullptr);
    const worker::PlacementLookup unplaced = [](const std::string&) { return store::Placement{}; };
    CHECK(registry.routes(unplaced, 0).empty());
    REQUIRE(registry.routes(unplaced, 1).size() == 1);
    store::OutboxRow row;
    row.namespace_name = "default";
    row.task_queue = "default";
    row.activity_type = "charge";
    CHECK(registry.pick(row, {}, 0) == nullptr);
    CHECK(registry.pick(row, {}, 1) == &target);
    profile.database = "elsewhere";  // not served here: nothing of any database
    auto& lost = registry.add("other", profile, nullptr);
    CHECK_FALSE(lost.takes_from(0));
    CHECK_FALSE(lost.takes_from(1));
}
