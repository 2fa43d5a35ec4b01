#include "outboxd/dispatch/backoff.hpp"

#include <algorithm>
#include <cmath>

namespace outboxd::dispatch {

std::chrono::milliseconds Backoff::delay_for(std::int32_t attempt) const {
    const double cap = static_cast<double>(max.count());
    double delay = static_cast<double>(base.count());
    // Multiply step by step and stop at the cap: pow() of a large attempt would overflow
    // to infinity, and the loop ends after a few dozen steps for any multiplier >= 2.
    for (std::int32_t i = 0; i < attempt && delay < cap; ++i) delay *= multiplier;
    return std::chrono::milliseconds{static_cast<std::int64_t>(std::min(delay, cap))};
}

}  // namespace outboxd::dispatch
