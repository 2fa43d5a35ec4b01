#include "done_rate.hpp"

#include <algorithm>
#include <limits>

namespace outboxd::chaos {

namespace {

constexpr std::int64_t kWindowMs = 1000;
// Backlog within this much of the rate before the fault counts as caught up: the load
// stages rows continuously, so some are always waiting.
constexpr double kNoiseSeconds = 0.5;

}  // namespace

double DoneRate::rate(std::int64_t from_ms, std::int64_t to_ms) const {
    if (to_ms <= from_ms) return 0;
    std::int64_t rows = 0;
    for (auto it = done_.lower_bound(from_ms); it != done_.end() && it->first < to_ms; ++it) {
        rows += it->second;
    }
    return static_cast<double>(rows) * 1000.0 / static_cast<double>(to_ms - from_ms);
}

std::int64_t DoneRate::sum_before(const std::map<std::int64_t, std::int64_t>& buckets,
                                  std::int64_t at_ms) {
    std::int64_t rows = 0;
    for (auto it = buckets.begin(); it != buckets.end() && it->first < at_ms; ++it)
        rows += it->second;
    return rows;
}

std::int64_t DoneRate::backlog(std::int64_t at_ms) const {
    return std::max<std::int64_t>(0, sum_before(staged_, at_ms) - sum_before(done_, at_ms));
}

Recovery DoneRate::recovery(std::int64_t start_ms, std::int64_t end_ms, std::int64_t limit_ms,
                            std::int64_t baseline_ms) const {
    Recovery out;
    out.pre_rate = rate(start_ms - baseline_ms, start_ms);
    const auto align = [this](std::int64_t ms) { return ms / bucket_ms_ * bucket_ms_; };
    for (auto t = align(start_ms - baseline_ms); t < start_ms; t += bucket_ms_) {
        out.pre_backlog = std::max(out.pre_backlog, backlog(t));
    }
    const auto caught_up =
        out.pre_backlog + static_cast<std::int64_t>(out.pre_rate * kNoiseSeconds);
    double lowest = std::numeric_limits<double>::max();
    bool fell_behind = false;
    for (auto t = align(start_ms); t < limit_ms; t += bucket_ms_) {
        if (t + kWindowMs <= limit_ms) lowest = std::min(lowest, rate(t, t + kWindowMs));
        const auto behind = backlog(t);
        out.peak_backlog = std::max(out.peak_backlog, behind);
        // From the start: the first moment it is caught up again once it fell behind (often
        // before the fault ends: other nodes take a dead node's shards over).
        if (behind > caught_up) {
            fell_behind = true;
        } else if (fell_behind && !out.since_start) {
            out.since_start = static_cast<double>(t - align(start_ms)) / 1000.0;
        }
        if (t >= align(end_ms) && behind <= caught_up) {
            out.seconds = static_cast<double>(t - align(end_ms)) / 1000.0;
            if (!out.since_start) out.since_start = 0.0;  // never behind
            break;
        }
    }
    out.min_rate = lowest == std::numeric_limits<double>::max() ? 0 : lowest;
    return out;
}

}  // namespace outboxd::chaos
