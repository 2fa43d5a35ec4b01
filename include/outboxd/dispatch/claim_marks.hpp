#pragma once

// What the claimer carries from round to round on the loop, beside the lane's state
// (ClaimerState):
// - the generations that make the next round read every route from the front (rows were
//   put back in line behind where claims read on) or count claimed rows again (the owned
//   ranges changed);
// - the release point: after a claim failed with its outcome unknown, its claims above the
//   highest token this node had seen, except those seen since (from the claim that ran
//   beside the failed one), go back before the next round;
// - the pacing of the poll backstop's reads from the front: at most about a twentieth of
//   the time, however slow they get under an old snapshot.
//
// Pure: time is passed in. Loop thread only.

#include <chrono>
#include <cstdint>
#include <optional>
#include <vector>

#include "outboxd/dispatch/claim_round.hpp"

namespace outboxd::dispatch {

class ClaimMarks {
public:
    using Clock = std::chrono::steady_clock;

    explicit ClaimMarks(std::chrono::milliseconds poll_interval)
        : poll_interval_(poll_interval), front_scan_period_(poll_interval) {}

    // The next round reads every route from the front.
    void read_from_front() { ++front_; }
    // The owned ranges changed: the next round counts claimed rows again and reads from the
    // front (new shards may hold another node's claims and rows behind every cursor).
    void ranges_changed() {
        ++ranges_;
        ++front_;
    }
    // The poll backstop: true (and the next round reads from the front) when a read from
    // the front is due at `now`.
    [[nodiscard]] bool backstop_due(Clock::time_point now);
    [[nodiscard]] ClaimGenerations generations() const { return {front_, ranges_}; }

    // What the next round must release first: the node's claims above `after`, except
    // `kept`. Only while no other claim is in flight.
    struct Release {
        std::int64_t after = 0;
        std::vector<std::int64_t> kept;
    };
    [[nodiscard]] std::optional<Release> release() const;
    [[nodiscard]] bool releasing() const { return release_from_.has_value(); }

    // A claim failed with its outcome unknown: what it may have claimed goes back before
    // the next round, which reads from the front (the released rows keep their place).
    void claim_failed();
    // A claim came back: its rows are seen.
    void seen(const ClaimRoundResult& result);
    // A round came back, taking `seconds`: it released what nobody saw before it claimed.
    void round_succeeded(const ClaimRoundResult& result, double seconds);

private:
    std::chrono::milliseconds poll_interval_;
    std::uint64_t front_ = 1;
    std::uint64_t ranges_ = 1;
    std::int64_t last_token_ = 0;  // the highest claim token seen
    std::optional<std::int64_t> release_from_;
    std::vector<std::int64_t> kept_;
    Clock::time_point last_front_scan_{};
    Clock::duration front_scan_period_;
};

}  // namespace outboxd::dispatch
