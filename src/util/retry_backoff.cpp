#include "outboxd/util/retry_backoff.hpp"

#include <algorithm>

namespace outboxd::util {
namespace {

// 2^kMaxDoublings · min exceeds any sensible max; stops the shift from overflowing.
constexpr std::uint32_t kMaxDoublings = 30;

}  // namespace

RetryBackoff::RetryBackoff(std::chrono::milliseconds min, std::chrono::milliseconds max, std::uint64_t seed)
    : min_(std::max(min, std::chrono::milliseconds{1})), max_(std::max(max, min_)), random_(seed) {}

std::chrono::milliseconds RetryBackoff::next() {
    const auto doublings = std::min(attempts_, kMaxDoublings);
    if (attempts_ < kMaxDoublings) ++attempts_;
    const auto max_count = max_.count();
    // Compare before shifting so that a large min cannot overflow.
    const auto base =
        min_.count() > (max_count >> doublings) ? max_count : min_.count() << doublings;
    std::uniform_int_distribution<std::int64_t> jitter{0, base / 2};
    return std::chrono::milliseconds{std::min<std::int64_t>(base + jitter(random_), max_count)};
}

}  // namespace outboxd::util
