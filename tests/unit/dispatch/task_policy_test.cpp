// Per-activity task policy: a type's own fields, then "*", then the node's; heartbeat
// deadlines in the in-flight table.

#include <catch2/catch.hpp>

#include "outboxd/dispatch/in_flight.hpp"
#include "outboxd/dispatch/task_policy.hpp"

using namespace outboxd;
using namespace std::chrono_literals;
using dispatch::task_policy;
using dispatch::TaskDefaults;

namespace {

const TaskDefaults kNode{{10, {1000ms, 2.0, 300000ms}}, 30000ms};

}  // namespace

TEST_CASE("a task's policy falls back field by field: type, then *, then the node",
          "[unit][dispatch][policy]") {
    store::DeliveryControls controls;
    SECTION("nothing set: the node's settings") {
        controls.activities["charge"].max_in_flight = 5;  // a limit is not task policy
        const auto policy = task_policy(controls, "charge", kNode);
        CHECK_FALSE(policy.own);
        CHECK(policy.failure.max_attempts == 10);
        CHECK(policy.timeout == 30000ms);
        CHECK_FALSE(policy.heartbeat_timeout);
    }
    SECTION("the type's own fields over *, * over the node, backoff part by part") {
        auto& any = controls.activities["*"];
        any.max_attempts = 3;
        any.timeout_ms = 5000;
        any.backoff = store::BackoffPolicy{std::int64_t{200}, std::nullopt, std::int64_t{800}};
        auto& charge = controls.activities["charge"];
        charge.max_attempts = 5;
        charge.backoff = store::BackoffPolicy{std::nullopt, 3.0, std::nullopt};
        const auto policy = task_policy(controls, "charge", kNode);
        CHECK(policy.own);
        CHECK(policy.failure.max_attempts == 5);
        CHECK(policy.timeout == 5000ms);
        CHECK(policy.failure.backoff.base == 200ms);
        CHECK(policy.failure.backoff.multiplier == 3.0);
        CHECK(policy.failure.backoff.max == 800ms);
        // Another type takes * alone.
        const auto other = task_policy(controls, "email", kNode);
        CHECK(other.failure.max_attempts == 3);
        CHECK(other.failure.backoff.multiplier == 2.0);
        CHECK(other.failure.backoff.delay_for(1) == 400ms);
    }
    SECTION("a heartbeat timeout without timeout_ms has no total limit; with one, it bounds") {
        controls.activities["long"].heartbeat_timeout_ms = 2000;
        auto policy = task_policy(controls, "long", kNode);
        CHECK(policy.heartbeat_timeout == 2000ms);
        CHECK(policy.timeout == 0ms);
        controls.activities["*"].timeout_ms = 60000;
        policy = task_policy(controls, "long", kNode);
        CHECK(policy.timeout == 60000ms);
    }
}

TEST_CASE("a heartbeat moves a heartbeating task's deadline, never past its total limit",
          "[unit][dispatch][policy]") {
    using Clock = dispatch::InFlightTable::Clock;
    const Clock::time_point t0{std::chrono::seconds{100}};
    dispatch::InFlightTable table;
    dispatch::InFlightTask beating;
    beating.ref = {1, 1};
    beating.session_id = "s1";
    beating.heartbeat_timeout = 1s;
    beating.hard_deadline = t0 + 2500ms;
    REQUIRE(table.add(beating, t0 + 1s));
    dispatch::InFlightTask plain;
    plain.ref = {2, 1};
    plain.session_id = "s1";
    REQUIRE(table.add(plain, t0 + 1s));

    CHECK_FALSE(table.touch("1.1", "s2", t0));  // another worker's heartbeat
    CHECK_FALSE(table.touch("9.9", "s1", t0));
    auto touched = table.touch("1.1", "s1", t0 + 800ms);
    REQUIRE(touched);
    CHECK(touched->deadline == t0 + 1800ms);
    // A plain task's deadline does not move.
    CHECK(table.touch("2.1", "s1", t0 + 800ms)->deadline == t0 + 1s);
    const auto expired = table.take_expired(t0 + 1s);
    REQUIRE(expired.size() == 1);
    CHECK(expired[0].ref.id == 2);
    // Capped by the total limit.
    CHECK(table.touch("1.1", "s1", t0 + 2000ms)->deadline == t0 + 2500ms);
    CHECK(table.take_expired(t0 + 2400ms).empty());
    CHECK(table.take_expired(t0 + 2500ms).size() == 1);
}
