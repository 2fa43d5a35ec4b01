#include <catch2/catch.hpp>

#include "outboxd/dispatch/claim_cursor.hpp"

using namespace outboxd;
using namespace std::chrono_literals;
using dispatch::ClaimCursors;

namespace {

const store::ClaimScope kRoute{"default", "default", std::nullopt, {}};
const store::ClaimScope kOther{"other", "default", std::nullopt, {}};
const auto kT0 = store::TimePoint{} + std::chrono::hours{24 * 365 * 50};

store::OutboxRow row_at(std::int64_t id, std::chrono::seconds offset = 0s) {
    store::OutboxRow row;
    row.id = id;
    row.visible_after = kT0 + offset;
    return row;
}

std::vector<store::OutboxRow> rows(std::initializer_list<std::int64_t> ids) {
    std::vector<store::OutboxRow> out;
    for (const auto id : ids) out.push_back(row_at(id));
    return out;
}

}  // namespace

TEST_CASE("a route's claims start from the front until a mark is a lookback old",
          "[unit][dispatch]") {
    ClaimCursors cursors{100ms};
    const auto now = ClaimCursors::Clock::now();
    CHECK_FALSE(cursors.start(kRoute, now, 1));  // nothing known: from the front
    cursors.advance(kRoute, rows({3, 1, 2}), /*from_front=*/true, /*filled=*/false, now, 1);
    CHECK_FALSE(cursors.start(kRoute, now + 50ms, 1));  // too recent: a late commit may follow
    const auto start = cursors.start(kRoute, now + 100ms, 1);
    REQUIRE(start);
    CHECK(*start == store::ClaimPosition{kT0, 3});  // the furthest row, whatever the order

    // Later claims move the mark on; a start reads the mark of a lookback ago.
    cursors.advance(kRoute, rows({7, 8}), false, false, now + 150ms, 1);
    CHECK(cursors.start(kRoute, now + 200ms, 1)->id == 3);
    CHECK(cursors.start(kRoute, now + 250ms, 1)->id == 8);
    // An empty claim changes nothing; other routes have their own cursor.
    cursors.advance(kRoute, {}, false, false, now + 300ms, 1);
    CHECK(cursors.start(kRoute, now + 400ms, 1)->id == 8);
    CHECK_FALSE(cursors.start(kOther, now + 400ms, 1));
}

TEST_CASE("a raised generation is owed a front read by every route until it claims one",
          "[unit][dispatch]") {
    ClaimCursors cursors{0ms};
    const auto now = ClaimCursors::Clock::now();
    cursors.advance(kRoute, rows({5}), true, false, now, 1);
    cursors.advance(kOther, rows({6}), true, false, now, 1);
    CHECK(cursors.start(kRoute, now, 1));
    // Generation 2: both routes read from the front once; rounds in which a route does
    // not claim (no credit, no headroom) leave it owed.
    CHECK_FALSE(cursors.start(kRoute, now, 2));
    CHECK_FALSE(cursors.start(kOther, now, 2));
    cursors.advance(kRoute, rows({9}), true, false, now + 1ms, 2);
    CHECK(cursors.start(kRoute, now + 1ms, 2)->id == 9);
    CHECK_FALSE(cursors.start(kOther, now + 5ms, 2));
    // A claim that did not read from the front settles nothing.
    cursors.advance(kOther, rows({10}), false, false, now + 6ms, 2);
    CHECK_FALSE(cursors.start(kOther, now + 6ms, 2));
}

TEST_CASE("a claim that fills its limit pulls the mark back to where it stopped",
          "[unit][dispatch]") {
    ClaimCursors cursors{10ms};
    const auto now = ClaimCursors::Clock::now();
    cursors.advance(kRoute, rows({10, 11, 12}), true, false, now, 1);
    cursors.advance(kRoute, rows({20}), false, false, now + 20ms, 1);  // high 20
    // Started from the old mark 12 and filled with late rows behind 20: rows between 15
    // and 20 may still wait, so no mark may stand past 15, old ones included.
    REQUIRE(cursors.start(kRoute, now + 25ms, 1)->id == 12);
    cursors.advance(kRoute, rows({13, 15}), false, true, now + 25ms, 1);
    CHECK(cursors.start(kRoute, now + 25ms, 1)->id == 12);
    CHECK(cursors.start(kRoute, now + 30ms, 1)->id == 15);  // was 20
    // From the front and filled: read on from the furthest row it took, every mark with it.
    cursors.advance(kRoute, {row_at(2, -5s), row_at(4, -5s)}, true, true, now + 50ms, 1);
    CHECK(*cursors.start(kRoute, now + 50ms, 1) == store::ClaimPosition{kT0 - 5s, 4});
    CHECK(*cursors.start(kRoute, now + 60ms, 1) == store::ClaimPosition{kT0 - 5s, 4});
    // Not filled: it saw everything past its start, so the mark only moves forward.
    cursors.advance(kRoute, {row_at(6, -5s)}, true, false, now + 70ms, 1);
    CHECK(cursors.start(kRoute, now + 80ms, 1)->id == 6);
    cursors.advance(kRoute, {row_at(1, -9s)}, false, false, now + 90ms, 1);
    CHECK(cursors.start(kRoute, now + 100ms, 1)->id == 6);
}

TEST_CASE("routes idle for a minute are forgotten", "[unit][dispatch]") {
    ClaimCursors cursors{0ms};
    const auto now = ClaimCursors::Clock::now();
    cursors.advance(kOther, rows({4}), true, false, now, 1);
    CHECK(cursors.start(kOther, now, 1));
    cursors.advance(kRoute, rows({5}), true, false, now + ClaimCursors::kIdleRoute + 1s, 1);
    CHECK_FALSE(cursors.start(kOther, now + ClaimCursors::kIdleRoute + 1s, 1));
}
