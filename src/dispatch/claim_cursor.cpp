#include "outboxd/dispatch/claim_cursor.hpp"

#include <algorithm>
#include <iterator>

namespace outboxd::dispatch {

std::optional<store::ClaimPosition> ClaimCursors::start(const store::ClaimScope& scope,
                                                        Clock::time_point now,
                                                        std::uint64_t generation) const {
    const auto it = routes_.find(scope);
    if (it == routes_.end() || it->second.front_seen < generation) return std::nullopt;
    // The mark that stood `lookback` ago: the last one made at or before then.
    std::optional<store::ClaimPosition> start;
    for (const auto& mark : it->second.marks) {
        if (mark.at > now - lookback_) break;
        start = mark.high;
    }
    return start;
}

void ClaimCursors::advance(const store::ClaimScope& scope,
                           const std::vector<store::OutboxRow>& rows, bool from_front, bool filled,
                           Clock::time_point now, std::uint64_t generation) {
    // Forgetting idle routes walks them all: once in a while, not at every claim (a round of
    // 300 routes made it 90,000 steps and scope comparisons, on the claims lane).
    if (now - pruned_ >= kPruneEvery) {
        pruned_ = now;
        std::erase_if(routes_, [&](const auto& entry) {
            return entry.second.used < now - kIdleRoute && !(entry.first == scope);
        });
    }
    auto& route = routes_[scope];
    route.used = now;
    if (from_front) route.front_seen = std::max(route.front_seen, generation);
    if (!rows.empty()) {
        const auto furthest = position_of(*std::max_element(
            rows.begin(), rows.end(),
            [](const auto& a, const auto& b) { return position_of(a) < position_of(b); }));
        if (filled) {
            // It stopped at `furthest`, perhaps with unclaimed rows between there and the old
            // mark (it may have started behind it): read on from there. No mark may stand
            // past it, or a later claim would skip those rows.
            route.high = furthest;
            for (auto& mark : route.marks) mark.high = std::min(mark.high, furthest);
        } else {
            // It read everything claimable past its start: the mark only moves forward.
            route.high = route.high ? std::max(*route.high, furthest) : furthest;
        }
        if (route.marks.empty() || route.marks.back().high != *route.high) {
            route.marks.push_back({now, *route.high});
        }
    }
    // Keep the last mark at or before `now - lookback` and everything after it.
    while (route.marks.size() > 1 && route.marks[1].at <= now - lookback_) {
        route.marks.pop_front();
    }
}

}  // namespace outboxd::dispatch
