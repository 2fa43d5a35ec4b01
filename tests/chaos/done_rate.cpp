#include "done_rate.hpp"

#include <algorithm>
#include <limits>

namespace outboxd::chaos {

namespace {

constexpr std::int64_t kWindowMs = 1000;
constexpr double kRecoveredShare = 0.5;

}  // namespace

double DoneRate::rate(std::int64_t from_ms, std::int64_t to_ms) const {
    if (to_ms <= from_ms) return 0;
    std::int64_t rows = 0;
    for (auto it = buckets_.lower_bound(from_ms); it != buckets_.end() && it->first < to_ms; ++it) {
        rows += it->second;
    }
    return static_cast<double>(rows) * 1000.0 / static_cast<double>(to_ms - from_ms);
}

Recovery DoneRate::recovery(std::int64_t start_ms, std::int64_t end_ms, std::int64_t limit_ms,
                            std::int64_t baseline_ms) const {
    Recovery out;
    out.pre_rate = rate(start_ms - baseline_ms, start_ms);
    const double threshold = out.pre_rate * kRecoveredShare;
    // Windows aligned to buckets, so each one counts whole buckets.
    const auto align = [this](std::int64_t ms) { return ms / bucket_ms_ * bucket_ms_; };
    double lowest = std::numeric_limits<double>::max();
    for (std::int64_t t = align(start_ms); t + kWindowMs <= limit_ms; t += bucket_ms_) {
        const double window = rate(t, t + kWindowMs);
        lowest = std::min(lowest, window);
        if (t >= align(end_ms) && window >= threshold) {
            out.seconds =
                static_cast<double>(std::max<std::int64_t>(0, t - align(end_ms))) / 1000.0;
            break;
        }
    }
    out.min_rate = lowest == std::numeric_limits<double>::max() ? 0 : lowest;
    return out;
}

}  // namespace outboxd::chaos
