#include <catch2/catch.hpp>

#include "outboxd/dispatch/claim_faults.hpp"

using outboxd::dispatch::ClaimFaults;
using namespace std::chrono_literals;

namespace {

outboxd::worker::Route route(const std::string& ns) {
    outboxd::worker::Route r;
    r.scope.namespace_name = ns;
    r.capacity = 1;
    return r;
}

}  // namespace

TEST_CASE("failed claim rounds back off, exponentially and capped, until one succeeds",
          "[unit][dispatch]") {
    ClaimFaults faults{{.retry_min = 50ms, .retry_max = 1000ms}, 7};
    const ClaimFaults::Clock::time_point t0{};
    CHECK_FALSE(faults.waiting(t0));
    std::chrono::milliseconds previous{0};
    for (int i = 0; i < 12; ++i) {
        const auto delay = faults.round_failed("down", t0);
        CHECK(delay >= 50ms);
        CHECK(delay <= 1000ms);
        if (i < 4) CHECK(delay >= previous);  // grows while under the cap
        previous = delay;
    }
    CHECK(previous >= 500ms);  // reached the cap's neighbourhood
    CHECK(faults.waiting(t0 + 1ms));
    CHECK_FALSE(faults.waiting(t0 + 1001ms));
    faults.round_succeeded(t0 + 2s);
    CHECK_FALSE(faults.waiting(t0 + 2s));
    CHECK(faults.round_failed("down again", t0 + 3s) <= 75ms);  // starts small again
}

TEST_CASE("a refused route rests, and only it", "[unit][dispatch]") {
    ClaimFaults faults{{.route_rest = 10s, .route_rest_max = 40s}, 7};
    const ClaimFaults::Clock::time_point t0{};
    faults.route_refused(route("bad").scope, "22P02", t0);
    std::vector routes{route("bad"), route("good")};
    faults.drop_resting(routes, t0 + 5s);
    REQUIRE(routes.size() == 1);
    CHECK(routes[0].scope.namespace_name == "good");
    std::vector later{route("bad"), route("good")};
    faults.drop_resting(later, t0 + 11s);
    CHECK(later.size() == 2);

    // Refused again soon after: 20 s, then 40 s (the cap), then 40 s again.
    faults.route_refused(route("bad").scope, "22P02", t0 + 11s);
    std::vector again{route("bad")};
    faults.drop_resting(again, t0 + 30s);
    CHECK(again.empty());
    faults.route_refused(route("bad").scope, "22P02", t0 + 31s);
    std::vector capped{route("bad")};
    faults.drop_resting(capped, t0 + 70s);
    CHECK(capped.empty());
    faults.drop_resting(capped = {route("bad")}, t0 + 72s);
    CHECK(capped.size() == 1);
    // Long after its rest, a new refusal starts from route_rest again.
    faults.route_refused(route("bad").scope, "22P02", t0 + 500s);
    std::vector fresh{route("bad")};
    faults.drop_resting(fresh, t0 + 511s);
    CHECK(fresh.size() == 1);
}
