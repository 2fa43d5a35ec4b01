// The claim path's "held until" decisions: verdicts from what a limited claim saw, the parts
// a round holds back, and the routes held between rounds.

#include <catch2/catch.hpp>

#include <boost/asio/io_context.hpp>

#include "outboxd/dispatch/claim_limits.hpp"

using namespace outboxd;
using namespace std::chrono_literals;
using dispatch::ClaimLimits;
using Facts = store::ClaimStore::LimitFacts;

namespace {

const ClaimLimits::Clock::time_point kT0{std::chrono::seconds{500}};

Facts type_room(std::int64_t room) {
    Facts facts;
    facts.type_room = room;
    return facts;
}

Facts bucket(double per_second, std::int32_t burst, double tokens) {
    Facts facts;
    facts.buckets.push_back({{per_second, burst}, tokens});
    return facts;
}

}  // namespace

TEST_CASE("a limit with room left holds nothing back", "[unit][dispatch][controls]") {
    CHECK_FALSE(ClaimLimits::judge(type_room(5), 3).wait);
    CHECK_FALSE(ClaimLimits::judge(bucket(100, 50, 40), 10).wait);
    CHECK_FALSE(ClaimLimits::judge({}, 7).wait);
}

TEST_CASE("a full concurrency limit rests a little, and says it is full",
          "[unit][dispatch][controls]") {
    // No room when the claim began.
    const auto none = ClaimLimits::judge(type_room(0), 0);
    REQUIRE(none.wait);
    CHECK(*none.wait == 20ms);
    CHECK(none.full);
    // Filled to the limit by this claim: the next one would find none either.
    const auto filled = ClaimLimits::judge(type_room(3), 3);
    REQUIRE(filled.wait);
    CHECK(filled.full);
}

TEST_CASE("a spent rate limit waits for a claim's worth of tokens", "[unit][dispatch][controls]") {
    // 20 a second, with less than one token: one token, 50 ms.
    const auto empty = ClaimLimits::judge(bucket(20, 5, 0.0), 0);
    REQUIRE(empty.wait);
    CHECK(*empty.wait == 50ms);
    CHECK_FALSE(empty.full);
    // 1,000 a second: a claim's worth is what 20 ms bring (20 tokens), not one.
    const auto fast = ClaimLimits::judge(bucket(1000, 100, 0.0), 0);
    REQUIRE(fast.wait);
    CHECK(*fast.wait == 20ms);
    // Spent by this claim: the wait starts from what is left.
    const auto spent = ClaimLimits::judge(bucket(20, 5, 5.0), 5);
    REQUIRE(spent.wait);
    CHECK(*spent.wait == 50ms);
    // A rate set by plain SQL far below the API's bound waits a minute at most.
    const auto slow = ClaimLimits::judge(bucket(0.0001, 1, 0.0), 0);
    REQUIRE(slow.wait);
    CHECK(*slow.wait == 60000ms);
}

TEST_CASE("a part is held by its own limit, and by its namespace's rate when it has one",
          "[unit][dispatch][controls]") {
    ClaimLimits::Parts parts;
    store::ClaimStore::ClaimControls typed;
    typed.activity_type = "charge";
    typed.max_in_flight = 3;
    const auto wait = parts.learn("ns", typed, {50ms, true}, kT0);
    REQUIRE(wait);
    CHECK(*wait == 50ms);
    CHECK(parts.held("ns", "charge", false, kT0 + 10ms) == kT0 + 50ms);
    CHECK_FALSE(parts.held("ns", "email", false, kT0 + 10ms));
    CHECK_FALSE(parts.held("ns", "charge", false, kT0 + 50ms));

    // A claim limited by its namespace's rate alone holds the whole namespace's rate.
    store::ClaimStore::ClaimControls rated;
    rated.namespace_rate = store::RateLimit{10, 1};
    (void)parts.learn("ns", rated, {100ms, false}, kT0);
    CHECK(parts.held("ns", "email", true, kT0 + 10ms) == kT0 + 100ms);
    CHECK_FALSE(parts.held("ns", "email", false, kT0 + 10ms));  // no rate of its own
    // Held by both: until both let it go.
    CHECK(parts.held("ns", "charge", true, kT0 + 10ms) == kT0 + 100ms);

    // An outcome that lands frees what a full concurrency limit held, not a rate's wait.
    parts.slots_freed();
    CHECK_FALSE(parts.held("ns", "charge", false, kT0 + 10ms));
    CHECK(parts.held("ns", "email", true, kT0 + 10ms) == kT0 + 100ms);
}

TEST_CASE("routes held back are left out until their wait ends, or a slot frees a full one",
          "[unit][dispatch][controls]") {
    boost::asio::io_context ioc;
    int looked_again = 0;
    ClaimLimits limits{ioc.get_executor(), [&] { ++looked_again; }};
    const store::ClaimScope rated{"a", "default", std::nullopt, {"charge"}};
    const store::ClaimScope full{"b", "default", std::nullopt, {"charge"}};
    const store::ClaimScope free{"c", "default", std::nullopt, {"charge"}};
    limits.hold({{rated, 100ms, false}, {full, 20ms, true}}, kT0);

    const auto routes = [&] {
        std::vector<worker::Route> all{{rated, 1, {}}, {full, 1, {}}, {free, 1, {}}};
        return all;
    };
    auto now_routes = routes();
    limits.drop_held(now_routes, kT0 + 10ms);
    REQUIRE(now_routes.size() == 1);
    CHECK(now_routes[0].scope == free);

    limits.slots_freed();  // an outcome landed: the full one may have room
    now_routes = routes();
    limits.drop_held(now_routes, kT0 + 10ms);
    CHECK(now_routes.size() == 2);

    now_routes = routes();
    limits.drop_held(now_routes, kT0 + 100ms);  // the rate's wait is over
    CHECK(now_routes.size() == 3);
    limits.stop();
}

TEST_CASE("a slot freed while a round holds the parts frees its holds, and only then",
          "[unit][dispatch][controls]") {
    boost::asio::io_context ioc;
    ClaimLimits limits{ioc.get_executor(), [] {}};
    store::ClaimStore::ClaimControls typed;
    typed.activity_type = "charge";
    typed.max_in_flight = 3;

    // Freed between rounds: the next round's learned hold stands.
    limits.slots_freed();
    auto parts = limits.lend_parts();
    (void)parts.learn("ns", typed, {20ms, true}, kT0);
    limits.round_learned(parts, {}, kT0);
    CHECK(limits.lend_parts().held("ns", "charge", false, kT0 + 1ms));
    limits.round_learned(limits.lend_parts(), {}, kT0);

    // Freed while a round is out: what it hands back is freed too.
    parts = limits.lend_parts();
    limits.slots_freed();
    limits.round_learned(parts, {}, kT0);
    CHECK_FALSE(limits.lend_parts().held("ns", "charge", false, kT0 + 1ms));
    limits.stop();
}
