#include <catch2/catch.hpp>

#include "outboxd/dispatch/in_flight.hpp"

using namespace outboxd;
using dispatch::Failure;
using dispatch::InFlightTable;
using dispatch::InFlightTask;
using Kind = store::Outcome::Kind;
using std::chrono::milliseconds;

namespace {

const InFlightTable::Clock::time_point kT0{std::chrono::seconds{1000}};

const dispatch::FailurePolicy kPolicy{3, {milliseconds{100}, 2.0, milliseconds{1000}}};

InFlightTask task(std::int64_t id, std::string session, std::int32_t attempt = 0) {
    InFlightTask out;
    out.ref = {id, id * 10};
    out.session_id = std::move(session);
    out.namespace_name = "ns";
    out.attempt = attempt;
    out.failure = kPolicy;
    return out;
}

}  // namespace

TEST_CASE("a task id names one claim of one row", "[unit][dispatch]") {
    CHECK(dispatch::task_id_for({42, 7}) == "42.7");
}

TEST_CASE("an answer takes a task only from the worker that holds it", "[unit][dispatch]") {
    InFlightTable table;
    REQUIRE(table.add(task(1, "s1"), kT0 + milliseconds{100}));
    CHECK_FALSE(table.add(task(1, "s2"), kT0 + milliseconds{200}));  // one claim, tracked once
    CHECK(table.size() == 1);

    CHECK_FALSE(table.take("1.10", "s2"));  // another worker's answer changes nothing
    CHECK_FALSE(table.take("9.90", "s1"));  // an unknown task neither
    CHECK(table.size() == 1);

    const auto taken = table.take("1.10", "s1");
    REQUIRE(taken);
    CHECK(taken->ref == store::ClaimRef{1, 10});
    CHECK(table.empty());
    CHECK_FALSE(table.take("1.10", "s1"));                        // a second answer finds nothing
    CHECK(table.take_expired(kT0 + milliseconds{1000}).empty());  // its deadline went with it
}

TEST_CASE("deadlines expire at their instant, earliest first", "[unit][dispatch]") {
    InFlightTable table;
    REQUIRE(table.add(task(1, "s1"), kT0 + milliseconds{300}));
    REQUIRE(table.add(task(2, "s1"), kT0 + milliseconds{100}));
    REQUIRE(table.add(task(3, "s2"), kT0 + milliseconds{200}));

    CHECK(table.take_expired(kT0 + milliseconds{99}).empty());
    const auto expired = table.take_expired(kT0 + milliseconds{200});
    REQUIRE(expired.size() == 2);
    CHECK(expired[0].ref.id == 2);
    CHECK(expired[1].ref.id == 3);
    CHECK(table.size() == 1);
    CHECK(table.take_expired(kT0 + milliseconds{300}).size() == 1);
    CHECK(table.empty());
}

TEST_CASE("a lost worker's tasks, and only its, are taken together", "[unit][dispatch]") {
    InFlightTable table;
    for (std::int64_t id = 1; id <= 6; ++id) {
        REQUIRE(table.add(task(id, id % 2 == 0 ? "even" : "odd"), kT0));
    }
    const auto even = table.take_session("even");
    CHECK(even.size() == 3);
    for (const auto& t : even) CHECK(t.session_id == "even");
    CHECK(table.size() == 3);
    CHECK(table.take_session("gone").empty());
    CHECK(table.take_all().size() == 3);
    CHECK(table.empty());
    CHECK(table.take_expired(kT0 + milliseconds{1}).empty());
}

TEST_CASE("a completed task is done", "[unit][dispatch]") {
    const auto settled = dispatch::completed(task(1, "s1"));
    CHECK(settled.outcome.kind == Kind::done);
    CHECK(settled.outcome.ref == store::ClaimRef{1, 10});
    CHECK(settled.label == "done");
}

TEST_CASE("failures retry with the attempt's backoff until attempts run out", "[unit][dispatch]") {
    SECTION("a reported failure retries after base x multiplier^attempt") {
        const auto first = dispatch::failed(task(1, "s1", 0), Failure::reported, "boom", true);
        CHECK(first.outcome.kind == Kind::retry);
        CHECK(first.outcome.delay == milliseconds{100});
        CHECK(first.outcome.error == "boom");
        CHECK(first.label == "retry");
        const auto second = dispatch::failed(task(1, "s1", 1), Failure::timed_out, "late", true);
        CHECK(second.outcome.kind == Kind::retry);
        CHECK(second.outcome.delay == milliseconds{200});
    }
    SECTION("the last attempt is a dead letter, whatever the cause") {
        for (const auto how : {Failure::reported, Failure::timed_out, Failure::lost}) {
            const auto last = dispatch::failed(task(1, "s1", 2), how, "boom", true);
            CHECK(last.outcome.kind == Kind::fail);
            CHECK(last.label == "failed");
        }
    }
    SECTION("a non-retryable failure is a dead letter at once") {
        const auto settled = dispatch::failed(task(1, "s1", 0), Failure::reported, "bad", false);
        CHECK(settled.outcome.kind == Kind::fail);
        CHECK(settled.outcome.error == "bad");
    }
    SECTION("a lost connection re-arms at once, still consuming the attempt") {
        const auto settled =
            dispatch::failed(task(1, "s1", 1), Failure::lost, "worker connection lost", true);
        CHECK(settled.outcome.kind == Kind::retry);
        CHECK(settled.outcome.delay == milliseconds{0});
        CHECK(settled.label == "failover");
    }
    SECTION("an attempt beyond the limit (a row inserted by plain SQL) is a dead letter") {
        const auto settled =
            dispatch::failed(task(1, "s1", 2147483647), Failure::reported, "x", true);
        CHECK(settled.outcome.kind == Kind::fail);
    }
}
