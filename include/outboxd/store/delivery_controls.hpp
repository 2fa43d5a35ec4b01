#pragma once

// A namespace's delivery controls (README, "Delivery controls"), stored with its settings:
// ordered delivery per workflow, concurrency and rate limits per namespace and activity
// type. Plain values; the rules are the API parser's and the table's CHECKs.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace outboxd::store {

enum class Ordering {
    none,      // rows of a workflow go in any order, several at once
    workflow,  // one at a time, in (ordinal, id) order
};

enum class OnDeadLetter {
    block,  // a dead letter holds its workflow's later rows until requeued or cancelled
    skip,   // a dead letter lets the next row go
};

// Bounds of the controls.
inline constexpr double kMaxRatePerSecond = 1'000'000;
// One token in about 17 minutes: below it a wait for a token would overflow nothing but mean
// nothing either (and a rate of 1e-320 is a typo).
inline constexpr double kMinRatePerSecond = 0.001;
inline constexpr std::int32_t kMaxBurst = 1'000'000;
inline constexpr std::int32_t kMaxActivityInFlight = 1'000'000;
inline constexpr std::size_t kMaxActivityPolicies = 1000;

// A token bucket: `per_second` tokens a second, at most `burst` saved up.
struct RateLimit {
    double per_second = 1;
    std::int32_t burst = 1;

    friend bool operator==(const RateLimit&, const RateLimit&) = default;
};

// What applies to one activity type of a namespace.
struct ActivityPolicy {
    std::optional<std::int32_t> max_in_flight;  // rows claimed at once, cluster-wide
    std::optional<RateLimit> rate_limit;        // dispatches, cluster-wide

    friend bool operator==(const ActivityPolicy&, const ActivityPolicy&) = default;
};

struct DeliveryControls {
    Ordering ordering = Ordering::none;
    OnDeadLetter on_dead_letter = OnDeadLetter::block;
    std::optional<RateLimit> rate_limit;               // the namespace's dispatches, cluster-wide
    std::map<std::string, ActivityPolicy> activities;  // by activity type

    friend bool operator==(const DeliveryControls&, const DeliveryControls&) = default;
};

[[nodiscard]] std::string_view to_string(Ordering ordering) noexcept;
[[nodiscard]] std::string_view to_string(OnDeadLetter policy) noexcept;
// False for an unknown token.
[[nodiscard]] bool parse_ordering(std::string_view token, Ordering& ordering) noexcept;
[[nodiscard]] bool parse_on_dead_letter(std::string_view token, OnDeadLetter& policy) noexcept;

}  // namespace outboxd::store
