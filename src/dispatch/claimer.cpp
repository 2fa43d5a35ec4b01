#include "outboxd/dispatch/claimer.hpp"

#include <random>

#include <spdlog/spdlog.h>

namespace outboxd::dispatch {

Claimer::Claimer(boost::asio::any_io_executor loop, DbLane& lane, metrics::NodeMetrics& metrics,
                 Settings settings)
    : loop_(std::move(loop)),
      lane_(lane),
      metrics_(metrics),
      settings_(settings),
      state_(std::make_shared<ClaimerState>(settings.lookback)),
      faults_({}, std::random_device{}()),
      front_scan_period_(settings.poll_interval) {}

void Claimer::ranges_changed() {
    ++ranges_generation_;
    ++front_generation_;
}

bool Claimer::backstop_due(Clock::time_point now) {
    if (now - last_front_scan_ < front_scan_period_) return false;
    last_front_scan_ = now;
    ++front_generation_;
    return true;
}

void Claimer::claim(ClaimRequest request, const std::function<void(Round)>& done) {
    request.batch_size = settings_.batch_size;
    request.generations = ClaimGenerations{front_generation_, ranges_generation_};
    claiming_ = true;
    const auto started = Clock::now();
    const bool queued = lane_.call(
        loop_, lifetime_.watch(),
        [request = std::move(request), state = state_,
         release_after = std::exchange(release_after_, std::nullopt)](DbHandles db) {
            if (release_after) {
                // The last round failed: what it may have claimed unseen goes back first.
                const auto released = db.claims.release_claims_after(request.owner, *release_after);
                if (released > 0) {
                    spdlog::warn("event=unknown_claims_released rows={}", released);
                    state->tally.known = false;
                }
            }
            return claim_round(db.claims, request, *state);
        },
        [this, started, done](LaneResult<ClaimRoundResult> result) {
            Round round{std::move(result.value),
                        std::move(result.error),
                        started,
                        std::chrono::duration<double>(Clock::now() - started).count(),
                        {}};
            finish(round);
            done(std::move(round));
        });
    if (!queued) {
        // Only one round is ever in flight, so a full claims lane means a stalled database.
        // The refused round took the settled counts with it: count again next time.
        state_->tally.known = false;
        Round round{{}, "the claims lane is full", started, 0.0, {}};
        finish(round);
        done(std::move(round));
    }
}

void Claimer::finish(Round& round) {
    claiming_ = false;
    metrics_.claim_seconds.Observe(round.seconds);
    const auto now = Clock::now();
    if (!round.error.empty()) {
        // Its claims may have committed unseen: release them before the next claim, which
        // then reads from the front (they keep their place in line).
        release_after_ = last_claim_token_;
        ++front_generation_;
        round.retry_after = faults_.round_failed(round.error, now);
        return;
    }
    faults_.round_succeeded(now);
    for (const auto& [scope, why] : round.result.refused) {
        metrics_.claim_route_errors_total.Increment();
        faults_.route_refused(scope, why, now);
    }
    last_claim_token_ = std::max(last_claim_token_, round.result.last_token);
    if (round.result.from_front) {
        // Spend at most about a twentieth of the time on backstop claims from the front.
        front_scan_period_ = std::max<Clock::duration>(
            settings_.poll_interval, std::chrono::duration_cast<Clock::duration>(
                                         std::chrono::duration<double>(20 * round.seconds)));
    }
}

}  // namespace outboxd::dispatch
