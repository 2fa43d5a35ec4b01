#pragma once

// The claim side of a node: runs claim rounds on the claims lane, one at a time, and owns
// everything carried from round to round:
// - on the lane: the claimed tally, the claim cursors and the fair share (ClaimerState);
// - the generations that make the next round read from the front (rows were put back in
//   line behind where claims read on) or count claimed rows again (the ranges changed);
// - the release point: after a failed round, whatever it may have claimed unseen (claims
//   above the highest token this node has seen) goes back before the next claim;
// - the backoff of failed rounds and the rest of routes refused as data (ClaimFaults);
// - the pacing of the poll backstop's reads from the front: at most about a twentieth of
//   the time, however slow they get under an old snapshot.
// Beside the rounds, one claim apart at a time runs on a lane of its own (claim_apart): a
// small claim for routes just woken from idle, so that they are served while a busy
// route's round is in flight instead of after it and their own round. Its caller keeps its
// namespaces out of the rounds meanwhile.
//
// Thread affinity: the loop thread; rounds run on the claims lane.

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <boost/asio/any_io_executor.hpp>

#include "outboxd/config/defaults.hpp"
#include "outboxd/dispatch/claim_faults.hpp"
#include "outboxd/dispatch/claim_round.hpp"
#include "outboxd/dispatch/db_lane.hpp"
#include "outboxd/metrics/node_metrics.hpp"
#include "outboxd/util/lifetime.hpp"

namespace outboxd::dispatch {

class Claimer {
public:
    using Clock = std::chrono::steady_clock;

    struct Settings {
        std::chrono::milliseconds poll_interval{defaults::kPollInterval};
        std::int32_t batch_size = defaults::kBatchSize;
        std::chrono::milliseconds lookback{defaults::kClaimLookback};  // see ClaimCursors
        std::int32_t apart_batch = defaults::kClaimApartBatch;         // see claim_apart
    };

    // What a round came back with.
    struct Round {
        ClaimRoundResult result;
        std::string error;  // empty: the round ran (some routes may still have been refused)
        // When the round was submitted; it took `seconds` on the lane.
        Clock::time_point started;
        double seconds = 0;
        // A failed round: the next may start after this (triggers wait for it meanwhile).
        std::chrono::milliseconds retry_after{0};
    };

    // `lane` runs the rounds, `apart_lane` the claims apart.
    Claimer(boost::asio::any_io_executor loop, DbLane& lane, DbLane& apart_lane,
            metrics::NodeMetrics& metrics, Settings settings);

    // Connects the claims-apart lane ahead of its first claim (which is all about latency);
    // a failure is left to that claim.
    void connect_apart_lane();

    // The next round reads every route from the front.
    void read_from_front() { ++front_generation_; }
    // The owned ranges changed: the next round counts claimed rows again and reads from the
    // front (new shards may hold another node's claims and rows behind every cursor).
    void ranges_changed();
    // The poll backstop: true (and the next round reads from the front) when a read from
    // the front is due at `now`.
    [[nodiscard]] bool backstop_due(Clock::time_point now);

    // Whether a round must still wait: for the backoff of a failed one, or, when claims may
    // have committed unseen, for the claim apart in flight (its rows must be seen before
    // the release of what nobody saw).
    [[nodiscard]] bool waiting(Clock::time_point now) const {
        return faults_.waiting(now) || (release_from_ && claiming_apart_);
    }
    // Removes the routes that rest after being refused (see ClaimFaults).
    void drop_resting(std::vector<worker::Route>& routes, Clock::time_point now) {
        faults_.drop_resting(routes, now);
    }

    // Runs one round for `request` (its batch size and generations are the claimer's).
    // `done` runs on the loop with the round, while the claimer lives; at once, when the
    // lane refuses the round.
    void claim(ClaimRequest request, const std::function<void(Round)>& done);
    [[nodiscard]] bool claiming() const { return claiming_; }

    // Runs a claim apart for `request.routes` (its batch size is the claimer's apart batch):
    // `done` runs on the loop as for claim(). Only while can_claim_apart(now).
    void claim_apart(ClaimRequest request, const std::function<void(Round)>& done);
    [[nodiscard]] bool can_claim_apart(Clock::time_point now) const {
        return !claiming_apart_ && !release_from_ && !faults_.waiting(now);
    }
    [[nodiscard]] bool claiming_apart() const { return claiming_apart_; }

private:
    void finish(Round& round);
    void finish_apart(Round& round);
    // A claim failed with its outcome unknown: what it may have claimed goes back before the
    // next round.
    void release_unseen();
    // A claim came back: its rows are seen.
    void seen(const ClaimRoundResult& result);

    boost::asio::any_io_executor loop_;
    DbLane& lane_;
    DbLane& apart_lane_;
    metrics::NodeMetrics& metrics_;
    Settings settings_;
    // Used by one round at a time, on the lane; shared so that a round in flight outlives
    // the claimer safely.
    std::shared_ptr<ClaimerState> state_;
    ClaimFaults faults_;
    std::uint64_t front_generation_ = 1;
    std::uint64_t ranges_generation_ = 1;
    // The highest claim token this node has seen. After a failed claim, the highest it had
    // seen then: its claims above that, except those seen since (`kept_`: from the claim
    // that ran beside the failed one), are released before the next round, which runs when
    // no other claim is in flight.
    std::int64_t last_claim_token_ = 0;
    std::optional<std::int64_t> release_from_;
    std::vector<std::int64_t> kept_;
    Clock::time_point last_front_scan_{};
    Clock::duration front_scan_period_;
    bool claiming_ = false;
    bool claiming_apart_ = false;
    util::Lifetime lifetime_;
};

}  // namespace outboxd::dispatch
