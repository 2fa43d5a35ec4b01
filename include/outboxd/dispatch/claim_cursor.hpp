#pragma once

// Where a route's claims start reading the pending index.
//
// A claim reads due rows in claim order (visible_after, id) off a partial index of pending
// rows. Every row it claims leaves a dead entry at the front of that index, which the next
// claims must step over until vacuum removes it; while any transaction still sees the old
// row (a concurrent outcome write, a long report holding its snapshot) each step is a heap
// visit. Reading from the front every time makes a claim's cost grow with everything
// claimed since the last vacuum.
//
// So a claim normally starts after a position instead: the route's high-water mark (the
// furthest row claimed, all rows before it having been claimed or skipped) as it stood a
// `lookback` ago. A row can still appear behind that mark:
//  - a transaction that ran longer than the lookback commits rows older than the mark;
//  - re-armed rows keep their place in line (failover, release);
//  - rows of resumed workflows and rows a claim skipped while they were locked;
//  - rows in shards newly acquired.
// Those are found by a claim from the front: the dispatcher asks for one when its own
// re-arms land, when the owned ranges change, and on the poll backstop. A claim from the
// front that fills its limit lowers the mark to where it stopped, so the rest of what lies
// behind is read next.
//
// Owned by one claimer; used by one claim round at a time.

#include <chrono>
#include <deque>
#include <map>
#include <optional>
#include <vector>

#include "outboxd/store/outbox_row.hpp"

namespace outboxd::dispatch {

class ClaimCursors {
public:
    using Clock = std::chrono::steady_clock;

    explicit ClaimCursors(std::chrono::milliseconds lookback) : lookback_(lookback) {}

    // The position a claim of `scope` at `now` may start after; nullopt: from the front.
    [[nodiscard]] std::optional<store::ClaimPosition> start(const store::ClaimScope& scope,
                                                            Clock::time_point now) const;

    // Records a claim of `scope` at `now` that returned `rows` (in any order). `from_front`:
    // it read from the front; `filled`: it got as many rows as it asked for.
    void advance(const store::ClaimScope& scope, const std::vector<store::OutboxRow>& rows,
                 bool from_front, bool filled, Clock::time_point now);

    [[nodiscard]] std::chrono::milliseconds lookback() const { return lookback_; }

private:
    struct Mark {
        Clock::time_point at;
        store::ClaimPosition high;
    };
    struct Route {
        std::optional<store::ClaimPosition> high;
        std::deque<Mark> marks;  // high after each change, oldest first
    };

    std::chrono::milliseconds lookback_;
    std::map<store::ClaimScope, Route> routes_;
};

}  // namespace outboxd::dispatch
