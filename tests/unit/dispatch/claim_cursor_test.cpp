#include <catch2/catch.hpp>

#include "outboxd/dispatch/claim_cursor.hpp"

using namespace outboxd;
using namespace std::chrono_literals;
using dispatch::ClaimCursors;

namespace {

const store::ClaimScope kRoute{"default", "default", std::nullopt, {}};
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
    CHECK_FALSE(cursors.start(kRoute, now));  // nothing known: from the front
    cursors.advance(kRoute, rows({3, 1, 2}), /*from_front=*/true, /*filled=*/false, now);
    CHECK_FALSE(cursors.start(kRoute, now + 50ms));  // too recent: a late commit may follow
    const auto start = cursors.start(kRoute, now + 100ms);
    REQUIRE(start);
    CHECK(*start == store::ClaimPosition{kT0, 3});  // the furthest row, whatever the order

    // Later claims move the mark on; a start reads the mark of a lookback ago.
    cursors.advance(kRoute, rows({7, 8}), false, false, now + 150ms);
    CHECK(cursors.start(kRoute, now + 200ms)->id == 3);
    CHECK(cursors.start(kRoute, now + 250ms)->id == 8);
    // An empty claim changes nothing; other routes have their own cursor.
    cursors.advance(kRoute, {}, false, false, now + 300ms);
    CHECK(cursors.start(kRoute, now + 400ms)->id == 8);
    CHECK_FALSE(cursors.start({"other", "default", std::nullopt, {}}, now + 400ms));
}

TEST_CASE("rows claimed behind the mark never move it back, unless a claim from the front "
          "stopped short",
          "[unit][dispatch]") {
    ClaimCursors cursors{0ms};
    const auto now = ClaimCursors::Clock::now();
    cursors.advance(kRoute, rows({10, 11, 12}), true, false, now);
    // A forward claim that found a late row behind the mark: the mark stays.
    cursors.advance(kRoute, {row_at(13), row_at(5, -1s)}, false, false, now + 1ms);
    CHECK(cursors.start(kRoute, now + 2ms)->id == 13);
    // From the front and filled: more may wait behind 13, so claims read on from the
    // furthest row it took, and every older mark is pulled back as well.
    cursors.advance(kRoute, {row_at(2, -5s), row_at(4, -5s)}, true, true, now + 3ms);
    const auto start = cursors.start(kRoute, now + 3ms);
    REQUIRE(start);
    CHECK(*start == store::ClaimPosition{kT0 - 5s, 4});
    CHECK(cursors.start(kRoute, now + 1ms)->id == 4);
    // From the front and not filled: it saw everything, so the mark only moves forward.
    cursors.advance(kRoute, {row_at(6, -5s)}, true, false, now + 4ms);
    CHECK(cursors.start(kRoute, now + 4ms)->id == 6);
}
