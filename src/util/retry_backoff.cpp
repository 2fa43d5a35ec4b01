#include "outboxd/util/retry_backoff.hpp"

#include <algorithm>

namespace outboxd::util {
namespace {

// 2^kMaxDoublings · min exceeds any sensible max; stops the shift from overflowing.
constexpr std::uint32_t kMaxDoublings = 30;

}  // namespace

RetryBackoff::RetryBackoff(std::chrono::milliseconds min, std::chrono::milliseconds max,
                           std::uint64_t seed)
    : min_(std::max(min, std::chrono::milliseconds{1})), max_(std::max(max, min_)), random_(seed) {}

std::chrono::milliseconds RetryBackoff::next() {
    const auto doublings = std::min(attempts_, kMaxDoublings);
    if (attempts_ < kMaxDoublings) ++attempts_;
    const auto max_count = max_.count();
    // Compare before shifting so that a large min cannot overflow.
    const auto ceiling =
        min_.count() > (max_count >> doublings) ? max_count : min_.count() << doublings;
    // Up to half of it off ("equal jitter"): clients cut off together spread out even once
    // they all reached the cap, where adding jitter on top would be cut back to the cap.
    std::uniform_int_distribution<std::int64_t> jitter{0, ceiling / 2};
    return std::chrono::milliseconds{
        std::max<std::int64_t>(ceiling - jitter(random_), min_.count())};
}

}  // namespace outboxd::util
