#pragma once

// Nearest-rank percentiles of latency samples (the latency scenarios).

#include <algorithm>
#include <cmath>
#include <vector>

namespace outboxd::bench {

// The nearest-rank `p`th percentile (0 < p <= 100) of `sorted` (ascending); 0 when empty.
[[nodiscard]] inline double percentile(const std::vector<double>& sorted, double p) {
    if (sorted.empty()) return 0;
    const auto rank = static_cast<std::size_t>(std::ceil(p / 100.0 * sorted.size()));
    return sorted[std::min(sorted.size(), std::max<std::size_t>(rank, 1)) - 1];
}

}  // namespace outboxd::bench
