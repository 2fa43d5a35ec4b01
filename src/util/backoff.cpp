#include "outboxd/util/backoff.hpp"

#include <algorithm>
#include <cmath>

namespace outboxd::util {

std::chrono::milliseconds Backoff::delay_for(std::int32_t attempt) const {
    const double cap = static_cast<double>(max.count());
    const double first = static_cast<double>(base.count());
    if (attempt <= 0 || multiplier <= 1.0 || first >= cap) {
        return std::chrono::milliseconds{static_cast<std::int64_t>(std::min(first, cap))};
    }
    // Closed form, O(1) for any attempt: past the attempt at which the delay reaches the cap
    // it is the cap (pow() of a large attempt would overflow to infinity).
    const double reaches_cap = std::log(cap / first) / std::log(multiplier);
    if (static_cast<double>(attempt) >= reaches_cap) return max;
    const double delay = first * std::pow(multiplier, static_cast<double>(attempt));
    return std::chrono::milliseconds{static_cast<std::int64_t>(std::min(delay, cap))};
}

}  // namespace outboxd::util
