#include "outboxd/dispatch/claimer.hpp"

#include <random>

#include <spdlog/spdlog.h>

#include "outboxd/util/untrusted_text.hpp"

namespace outboxd::dispatch {
namespace {

Claimer::Round round_of(LaneResult<ClaimRoundResult> result, Claimer::Clock::time_point started) {
    return {std::move(result.value), std::move(result.error), started,
            std::chrono::duration<double>(Claimer::Clock::now() - started).count(),
            std::chrono::milliseconds{0}};
}

}  // namespace

Claimer::Claimer(boost::asio::any_io_executor loop, DbLane& lane, DbLane& apart_lane,
                 metrics::NodeMetrics& metrics, Settings settings)
    : loop_(std::move(loop)),
      lane_(lane),
      apart_lane_(apart_lane),
      metrics_(metrics),
      settings_(settings),
      state_(std::make_shared<ClaimerState>(settings.lookback)),
      faults_({}, std::random_device{}()),
      front_scan_period_(settings.poll_interval) {}

void Claimer::connect_apart_lane() {
    (void)apart_lane_.submit([](DbHandles db) {
        try {
            db.claims.connect();
        } catch (const std::exception& error) {
            spdlog::debug("event=claims_apart_connect_failed error=\"{}\"",
                          util::log_safe(error.what()));
        }
    });
}

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
        [request = std::move(request), state = state_, release_after = release_from_,
         kept = kept_](DbHandles db) {
            if (release_after) {
                // A claim failed: what it may have claimed unseen goes back first.
                const auto released =
                    db.claims.release_claims_after(request.owner, *release_after, kept);
                if (released > 0) {
                    spdlog::warn("event=unknown_claims_released rows={}", released);
                    state->tally.known = false;
                }
            }
            return claim_round(db.claims, request, *state);
        },
        [this, started, done](LaneResult<ClaimRoundResult> result) {
            auto round = round_of(std::move(result), started);
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
        release_unseen();
        round.retry_after = faults_.round_failed(round.error, now);
        return;
    }
    faults_.round_succeeded(now);
    release_from_.reset();  // the round released what nobody saw before it claimed
    kept_.clear();
    for (const auto& [scope, why] : round.result.refused) {
        metrics_.claim_route_errors_total.Increment();
        faults_.route_refused(scope, why, now);
    }
    seen(round.result);
    if (round.result.from_front) {
        // Spend at most about a twentieth of the time on backstop claims from the front.
        front_scan_period_ = std::max<Clock::duration>(
            settings_.poll_interval, std::chrono::duration_cast<Clock::duration>(
                                         std::chrono::duration<double>(20 * round.seconds)));
    }
}

void Claimer::claim_apart(ClaimRequest request, const std::function<void(Round)>& done) {
    request.batch_size = settings_.apart_batch;
    claiming_apart_ = true;
    const auto started = Clock::now();
    const bool queued = apart_lane_.call(
        loop_, lifetime_.watch(),
        [request = std::move(request)](DbHandles db) {
            return dispatch::claim_apart(db.claims, request);
        },
        [this, started, done](LaneResult<ClaimRoundResult> result) {
            auto round = round_of(std::move(result), started);
            finish_apart(round);
            done(std::move(round));
        });
    if (!queued) {
        Round round{{}, "the claims-apart lane is full", started, 0.0, {}};
        finish_apart(round);
        done(std::move(round));
    }
}

void Claimer::finish_apart(Round& round) {
    claiming_apart_ = false;
    metrics_.claims_apart_total.Increment();
    if (!round.error.empty()) {
        // The rounds' own failures pace the retries: a claim apart is only ever a shortcut.
        release_unseen();
        return;
    }
    for (const auto& [scope, why] : round.result.refused) {
        metrics_.claim_route_errors_total.Increment();
        faults_.route_refused(scope, why, Clock::now());
    }
    seen(round.result);
}

void Claimer::release_unseen() {
    // The claims seen so far stay; the next claim reads from the front (the released rows
    // keep their place in line).
    if (!release_from_) release_from_ = last_claim_token_;
    ++front_generation_;
}

void Claimer::seen(const ClaimRoundResult& result) {
    last_claim_token_ = std::max(last_claim_token_, result.last_token);
    if (!release_from_) return;
    for (const auto& row : result.rows) {
        if (row.claim_token > *release_from_) kept_.push_back(row.claim_token);
    }
}

}  // namespace outboxd::dispatch
