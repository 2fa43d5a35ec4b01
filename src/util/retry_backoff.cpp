#include "outboxd/util/retry_backoff.hpp"

#include <algorithm>

namespace outboxd::util {
namespace {

// Far past the cap of any sensible range; the count saturates there.
constexpr std::uint32_t kMaxCounted = 1000;

Backoff doubling(std::chrono::milliseconds min, std::chrono::milliseconds max) {
    const auto floor = std::max(min, std::chrono::milliseconds{1});
    return {floor, 2.0, std::max(max, floor)};
}

}  // namespace

RetryBackoff::RetryBackoff(std::chrono::milliseconds min, std::chrono::milliseconds max,
                           std::uint64_t seed)
    : backoff_(doubling(min, max)), random_(seed) {}

std::chrono::milliseconds RetryBackoff::next() {
    const auto ceiling = backoff_.delay_for(static_cast<std::int32_t>(attempts_)).count();
    if (attempts_ < kMaxCounted) ++attempts_;
    // Up to half of it off ("equal jitter"): clients cut off together spread out even once
    // they all reached the cap, where adding jitter on top would be cut back to the cap.
    std::uniform_int_distribution<std::int64_t> jitter{0, ceiling / 2};
    return std::chrono::milliseconds{
        std::max<std::int64_t>(ceiling - jitter(random_), backoff_.base.count())};
}

}  // namespace outboxd::util
