#pragma once

// Delays between tries of something that failed (a reconnect, a claim round, an accept):
// exponential from a minimum to a maximum, with jitter so that clients cut off together do
// not retry in lock step. Every retry loop of the node and the SDK uses this one.
// Not thread-safe: one owner.

#include <chrono>
#include <cstdint>
#include <random>

#include "outboxd/util/backoff.hpp"

namespace outboxd::util {

class RetryBackoff {
public:
    // `seed` feeds the jitter; tests pass a fixed one.
    RetryBackoff(std::chrono::milliseconds min, std::chrono::milliseconds max, std::uint64_t seed);

    // The delay before the next attempt, always within [min, max]: for the n-th consecutive
    // call, c = Backoff{min, 2, max}.delay_for(n), less up to half of c as jitter (never
    // below min).
    [[nodiscard]] std::chrono::milliseconds next();
    // After a success: the next delay starts from min again.
    void reset() noexcept { attempts_ = 0; }
    // Consecutive failures since the last reset (saturates).
    [[nodiscard]] std::uint32_t failures() const noexcept { return attempts_; }

private:
    Backoff backoff_;
    std::uint32_t attempts_ = 0;
    std::mt19937_64 random_;
};

}  // namespace outboxd::util
