#pragma once

#include <chrono>
#include <cstdint>

#include "outboxd/config/defaults.hpp"

namespace outboxd::util {

// Exponential backoff, the one formula every delay of outboxd grows by: base ·
// multiplier^attempt, clamped to max. Saturates instead of overflowing, so any attempt count
// yields a delay within [base, max]. A row's retries use it as configured; retry loops
// (RetryBackoff) use it doubling, with jitter.
struct Backoff {
    std::chrono::milliseconds base{defaults::kBackoffBase};
    double multiplier = defaults::kBackoffMultiplier;
    std::chrono::milliseconds max{defaults::kBackoffMax};

    // Delay before the retry that follows the failed attempt `attempt` (zero-based).
    [[nodiscard]] std::chrono::milliseconds delay_for(std::int32_t attempt) const;
};

}  // namespace outboxd::util
