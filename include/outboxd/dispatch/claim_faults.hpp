#pragma once

// What the claimer does when claims fail, so that no failure turns into a spin:
// - a failed round (the database unreachable, a conflict) delays the next round by a
//   capped exponential backoff with jitter; triggers meanwhile wait for it;
// - a route whose claim fails for a cause of its own rests, and the other routes are
//   claimed as usual; a route refused again soon after its rest rests twice as long (up to
//   route_rest_max), so a route that can never be claimed costs a statement now and then;
// - the log gets one line when claims start failing, a summary now and then, and one line
//   when they recover: never one per try.
//
// Pure logic: time is passed in. Loop thread only.

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "outboxd/util/failure_run.hpp"
#include "outboxd/util/retry_backoff.hpp"
#include "outboxd/worker/worker_registry.hpp"

namespace outboxd::dispatch {

class ClaimFaults {
public:
    using Clock = std::chrono::steady_clock;

    struct Settings {
        std::chrono::milliseconds retry_min{50};
        std::chrono::milliseconds retry_max{5000};
        std::chrono::milliseconds route_rest{10000};
        std::chrono::milliseconds route_rest_max{300000};
        std::chrono::milliseconds summary_every{30000};  // of the log while rounds fail
        std::string database = "default";                // names the claims in the log
    };

    ClaimFaults(const Settings& settings, std::uint64_t seed);

    // A round failed: the next may start after the returned delay.
    std::chrono::milliseconds round_failed(const std::string& error, Clock::time_point now);
    // A round succeeded: rounds may run at once again.
    void round_succeeded(Clock::time_point now);
    // Whether a round must still wait for the backoff of a failed one.
    [[nodiscard]] bool waiting(Clock::time_point now) const { return now < retry_at_; }
    [[nodiscard]] Clock::time_point retry_at() const { return retry_at_; }

    // This route's claim failed for a cause of its own: it rests (see above).
    void route_refused(const store::ClaimScope& scope, const std::string& error,
                       Clock::time_point now);
    // Removes the routes that rest from `routes` (and forgets rests that are over).
    void drop_resting(std::vector<worker::Route>& routes, Clock::time_point now);

private:
    Settings settings_;
    util::RetryBackoff backoff_;
    Clock::time_point retry_at_{};
    util::FailureRun failures_;
    struct Rest {
        Clock::time_point until;
        std::chrono::milliseconds length{0};
    };
    std::map<store::ClaimScope, Rest> resting_;  // kept a while after a rest ends: see above
};

}  // namespace outboxd::dispatch
