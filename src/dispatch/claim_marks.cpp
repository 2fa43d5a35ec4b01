#include "outboxd/dispatch/claim_marks.hpp"

#include <algorithm>

namespace outboxd::dispatch {

bool ClaimMarks::backstop_due(Clock::time_point now) {
    if (now - last_front_scan_ < front_scan_period_) return false;
    last_front_scan_ = now;
    ++front_;
    return true;
}

std::optional<ClaimMarks::Release> ClaimMarks::release() const {
    if (!release_from_) return std::nullopt;
    return Release{*release_from_, kept_};
}

void ClaimMarks::claim_failed() {
    // The claims seen so far stay; the next claim reads from the front.
    if (!release_from_) release_from_ = last_token_;
    ++front_;
}

void ClaimMarks::seen(const ClaimRoundResult& result) {
    last_token_ = std::max(last_token_, result.last_token);
    if (!release_from_) return;
    for (const auto& row : result.rows) {
        if (row.claim_token > *release_from_) kept_.push_back(row.claim_token);
    }
}

void ClaimMarks::round_succeeded(const ClaimRoundResult& result, double seconds) {
    release_from_.reset();
    kept_.clear();
    seen(result);
    if (result.from_front) {
        // Spend at most about a twentieth of the time on backstop claims from the front.
        front_scan_period_ = std::max<Clock::duration>(
            poll_interval_, std::chrono::duration_cast<Clock::duration>(
                                std::chrono::duration<double>(20 * seconds)));
    }
}

}  // namespace outboxd::dispatch
