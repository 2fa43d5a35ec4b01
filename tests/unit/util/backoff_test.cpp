#include <catch2/catch.hpp>

#include "outboxd/util/backoff.hpp"

using outboxd::util::Backoff;
using namespace std::chrono_literals;

TEST_CASE("backoff grows geometrically and clamps to its maximum", "[unit][dispatch]") {
    const Backoff backoff{100ms, 2.0, 60s};
    CHECK(backoff.delay_for(0) == 100ms);
    CHECK(backoff.delay_for(1) == 200ms);
    CHECK(backoff.delay_for(2) == 400ms);
    CHECK(backoff.delay_for(9) == 51200ms);
    CHECK(backoff.delay_for(10) == 60s);
    CHECK(backoff.delay_for(1000) == 60s);  // saturates, never overflows
    CHECK(backoff.delay_for(INT32_MAX) == 60s);
    const Backoff flat{250ms, 1.0, 1s};
    CHECK(flat.delay_for(50) == 250ms);
    // In one step whatever the attempt (a row staged by plain SQL may carry any): a loop
    // multiplying up to the cap would never reach it with a multiplier of 1.
    CHECK(flat.delay_for(INT32_MAX) == 250ms);
    const Backoff gentle{1ms, 1.0001, 1s};
    CHECK(gentle.delay_for(INT32_MAX) == 1s);
    const Backoff huge{1000ms, 100.0, std::chrono::milliseconds{86400000}};
    CHECK(huge.delay_for(30) == std::chrono::milliseconds{86400000});
}
