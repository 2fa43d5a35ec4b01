#pragma once

#include <chrono>
#include <cstdint>

namespace outboxd::dispatch {

// Retry backoff: base · multiplier^attempt, clamped to max. Saturates instead of
// overflowing, so any attempt count yields a delay within [base, max].
struct Backoff {
    std::chrono::milliseconds base{1000};
    double multiplier = 2.0;
    std::chrono::milliseconds max{300000};

    // Delay before the retry that follows the failed attempt `attempt` (zero-based).
    [[nodiscard]] std::chrono::milliseconds delay_for(std::int32_t attempt) const;
};

}  // namespace outboxd::dispatch
