#pragma once

// Reconnect delays: exponential from a minimum to a maximum, with jitter so that workers
// cut off together do not reconnect in lock step. Not thread-safe (network thread only).

#include <chrono>
#include <cstdint>
#include <random>

namespace outboxd::sdk::detail {

class Backoff {
public:
    // `seed` feeds the jitter; tests pass a fixed one.
    Backoff(std::chrono::milliseconds min, std::chrono::milliseconds max, std::uint64_t seed);

    // The delay before the next attempt, always within [min, max]: min·2^n for the n-th
    // consecutive call, capped at max, plus up to half of that again as jitter (capped too).
    [[nodiscard]] std::chrono::milliseconds next();
    // After a successful session: the next delay starts from min again.
    void reset() noexcept { attempts_ = 0; }

private:
    std::chrono::milliseconds min_;
    std::chrono::milliseconds max_;
    std::uint32_t attempts_ = 0;
    std::mt19937_64 random_;
};

}  // namespace outboxd::sdk::detail
