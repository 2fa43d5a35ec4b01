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
// furthest row claimed, every row before it having been claimed or skipped) as it stood a
// `lookback` ago. A row can still appear behind that mark:
//  - a transaction that ran longer than the lookback commits rows older than the mark;
//  - re-armed rows keep their place in line (failover, release);
//  - rows of resumed workflows, rows a claim skipped while they were locked, rows staged
//    with a visible_after in the past;
//  - rows in shards newly acquired.
// Those are found by a claim from the front. The claimer asks for one by raising the
// front generation (on its own re-arms, a resume, a shard change, a failed round, and on
// the poll backstop); each route then reads from the front once, on its next claim, however
// many rounds pass before it has credit to claim. A claim that fills its limit pulls the
// mark back to where it stopped, so whatever lies behind the old mark is read next.
//
// Owned by one claimer; used by one claim round at a time.

#include <chrono>
#include <cstdint>
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

    // The position a claim of `scope` at `now` may start after; nullopt: from the front
    // (nothing known a lookback ago, or a front read of `generation` is still owed).
    [[nodiscard]] std::optional<store::ClaimPosition> start(const store::ClaimScope& scope,
                                                            Clock::time_point now,
                                                            std::uint64_t generation) const;

    // Records a claim of `scope` that returned `rows` (in any order) at `now`: whether it
    // read from the front (settling `generation` for the route) and whether it got as many
    // rows as it asked for.
    void advance(const store::ClaimScope& scope, const std::vector<store::OutboxRow>& rows,
                 bool from_front, bool filled, Clock::time_point now, std::uint64_t generation);

    // Routes not claimed for this long are forgotten (their next claim reads from the front),
    // looked for at most this often.
    static constexpr std::chrono::seconds kIdleRoute{60};
    static constexpr std::chrono::seconds kPruneEvery{1};

private:
    struct Mark {
        Clock::time_point at;
        store::ClaimPosition high;
    };
    struct Route {
        std::optional<store::ClaimPosition> high;
        std::deque<Mark> marks;  // high after each change, oldest first
        std::uint64_t front_seen = 0;
        Clock::time_point used;
    };

    std::chrono::milliseconds lookback_;
    std::map<store::ClaimScope, Route> routes_;
    Clock::time_point pruned_{};
};

}  // namespace outboxd::dispatch
