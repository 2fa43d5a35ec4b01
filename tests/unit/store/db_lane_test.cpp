#include <catch2/catch.hpp>

#include <atomic>
#include <future>
#include <optional>
#include <stdexcept>
#include <thread>

#include <boost/asio/io_context.hpp>

#include <prometheus/counter.h>
#include <prometheus/registry.h>

#include "loop_wait.hpp"
#include "outboxd/store/db_lane.hpp"
#include "outboxd/util/lifetime.hpp"

// The lane's machinery with stores of a test's own: no database is needed.

using namespace outboxd;
using store::LaneResult;

namespace {

const char* const kNoDatabase = "postgresql://127.0.0.1:1/none";

// Made on the lane's thread, as real stores are.
struct NoStores {
    explicit NoStores(const store::LaneConnection& connection) : url(connection.database_url) {}
    std::string url;
    std::thread::id made_on = std::this_thread::get_id();
};
using DbLane = store::DbLane<NoStores>;
using DbHandles = NoStores&;

void run_until(boost::asio::io_context& ioc, const std::function<bool()>& done) {
    (void)test::run_until(ioc, done, std::chrono::seconds{5});
}

// Runs whatever the jobs queued so far posted to the loop: a job queued after them has run
// once they have (a lane runs its jobs in order), and so have their posts.
void settle(DbLane& lane, boost::asio::io_context& ioc) {
    std::promise<void> last;
    REQUIRE(lane.submit([&](DbHandles) { last.set_value(); }));
    last.get_future().wait();
    ioc.restart();
    ioc.poll();
}

}  // namespace

TEST_CASE("a job called on a lane gives its value back on the loop", "[unit][store]") {
    boost::asio::io_context ioc;
    DbLane lane({.name = "test"}, kNoDatabase);
    util::Lifetime owner;
    std::optional<LaneResult<int>> got;
    const auto loop_thread = std::this_thread::get_id();
    std::thread::id ran_on;
    REQUIRE(lane.call(
        ioc.get_executor(), owner.watch(),
        [&ran_on](DbHandles) {
            ran_on = std::this_thread::get_id();
            return 42;
        },
        [&](LaneResult<int> result) {
            CHECK(std::this_thread::get_id() == loop_thread);
            got = std::move(result);
        }));
    run_until(ioc, [&] { return got.has_value(); });
    REQUIRE(got);
    CHECK(got->ok());
    CHECK(got->value == 42);
    CHECK(ran_on != loop_thread);
}

TEST_CASE("what a job throws comes back as the result's error", "[unit][store]") {
    boost::asio::io_context ioc;
    DbLane lane({.name = "test"}, kNoDatabase);
    util::Lifetime owner;
    std::optional<LaneResult<std::monostate>> got;
    REQUIRE(lane.call(
        ioc.get_executor(), owner.watch(), [](DbHandles) { throw std::runtime_error("no luck"); },
        [&](LaneResult<std::monostate> result) { got = std::move(result); }));
    run_until(ioc, [&] { return got.has_value(); });
    REQUIRE(got);
    CHECK_FALSE(got->ok());
    CHECK(got->error == "no luck");
}

TEST_CASE("a result whose owner is gone is dropped, not delivered", "[unit][store]") {
    boost::asio::io_context ioc;
    DbLane lane({.name = "test"}, kNoDatabase);
    std::promise<void> ran;
    bool delivered = false;
    {
        util::Lifetime owner;
        REQUIRE(lane.call(
            ioc.get_executor(), owner.watch(), [&](DbHandles) { ran.set_value(); },
            [&](const LaneResult<std::monostate>&) { delivered = true; }));
        ran.get_future().wait();  // the job ran, its result is on its way to the loop
    }
    settle(lane, ioc);
    CHECK_FALSE(delivered);
}

TEST_CASE("a full lane refuses a call, counts it, and never calls back", "[unit][store]") {
    boost::asio::io_context ioc;
    prometheus::Registry registry;
    auto& rejected = prometheus::BuildCounter().Name("rejected").Register(registry).Add({});
    DbLane lane({.name = "test", .capacity = 1, .rejected = &rejected}, kNoDatabase);
    util::Lifetime owner;
    std::promise<void> release;
    std::promise<void> started;
    // One job holds the thread, one waits in the queue; the third finds the queue full.
    REQUIRE(lane.submit([&, go = release.get_future().share()](DbHandles) {
        started.set_value();
        go.wait();
    }));
    started.get_future().wait();
    int delivered = 0;
    REQUIRE(lane.call(
        ioc.get_executor(), owner.watch(), [](DbHandles) {},
        [&](const LaneResult<std::monostate>&) { ++delivered; }));
    CHECK_FALSE(lane.call(
        ioc.get_executor(), owner.watch(), [](DbHandles) {},
        [&](const LaneResult<std::monostate>&) { ++delivered; }));
    CHECK(rejected.Value() == 1);
    release.set_value();
    run_until(ioc, [&] { return delivered == 1; });
    settle(lane, ioc);
    CHECK(delivered == 1);
}

TEST_CASE("a lane's jobs get stores made on the lane's own thread from its URL", "[unit][store]") {
    boost::asio::io_context ioc;
    DbLane lane({.name = "test"}, kNoDatabase);
    util::Lifetime owner;
    std::optional<LaneResult<bool>> got;
    REQUIRE(lane.call(
        ioc.get_executor(), owner.watch(),
        [](NoStores& stores) {
            return stores.url == kNoDatabase && stores.made_on == std::this_thread::get_id();
        },
        [&](LaneResult<bool> result) { got = std::move(result); }));
    run_until(ioc, [&] { return got.has_value(); });
    REQUIRE(got);
    CHECK(got->value);
}
