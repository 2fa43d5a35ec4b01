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

// Bounds of the per-activity task policy: those of the node's own settings
// (OUTBOXD_MAX_ATTEMPTS, OUTBOXD_BACKOFF_*, OUTBOXD_TASK_TIMEOUT_MS).
inline constexpr std::int32_t kMaxPolicyAttempts = 1000;
inline constexpr std::int64_t kMaxPolicyMs = 86'400'000;  // a day
inline constexpr std::int64_t kMinTaskTimeoutMs = 10;
inline constexpr std::int64_t kMinHeartbeatTimeoutMs = 100;
inline constexpr double kMaxBackoffMultiplier = 100;

// A retry backoff; an unset part is the node's (OUTBOXD_BACKOFF_*).
struct BackoffPolicy {
    std::optional<std::int64_t> base_ms;
    std::optional<double> multiplier;
    std::optional<std::int64_t> max_ms;

    friend bool operator==(const BackoffPolicy&, const BackoffPolicy&) = default;
};

// What applies to one activity type of a namespace ("*": to every type of it, below a
// type's own). Unset fields fall back: a type's to "*", "*"'s to the node's settings.
struct ActivityPolicy {
    std::optional<std::int32_t> max_in_flight;  // rows claimed at once, cluster-wide
    std::optional<RateLimit> rate_limit;        // dispatches, cluster-wide
    // The task's life (README, "Task policy and heartbeats").
    std::optional<std::int32_t> max_attempts;
    std::optional<std::int64_t> timeout_ms;            // the whole attempt
    std::optional<std::int64_t> heartbeat_timeout_ms;  // the longest silence between heartbeats
    std::optional<BackoffPolicy> backoff;

    // Whether the policy sets anything of a task's life (not only limits).
    [[nodiscard]] bool shapes_tasks() const {
        return max_attempts || timeout_ms || heartbeat_timeout_ms || backoff;
    }

    friend bool operator==(const ActivityPolicy&, const ActivityPolicy&) = default;
};

struct DeliveryControls {
    Ordering ordering = Ordering::none;
    OnDeadLetter on_dead_letter = OnDeadLetter::block;
    std::optional<RateLimit> rate_limit;               // the namespace's dispatches, cluster-wide
    std::map<std::string, ActivityPolicy> activities;  // by activity type

    // Whether any of it bears on claims (ordering, a limit): a namespace with none is
    // claimed on the plain path, whatever task policy it has.
    [[nodiscard]] bool shapes_claims() const {
        if (ordering != Ordering::none || rate_limit) return true;
        for (const auto& [type, policy] : activities) {
            if (policy.max_in_flight || policy.rate_limit) return true;
        }
        return false;
    }

    friend bool operator==(const DeliveryControls&, const DeliveryControls&) = default;
};

// Why `rate` (named `where`) is out of bounds (none: it is not, or is unset).
[[nodiscard]] std::optional<std::string> rate_problem(const std::optional<RateLimit>& rate,
                                                      const std::string& where);
// Why `policy` of activity type `type` is out of bounds (none: it is not). Checks every
// field, the limits and the task policy alike; names the field as "activities.<type>.<field>".
[[nodiscard]] std::optional<std::string> policy_problem(const std::string& type,
                                                        const ActivityPolicy& policy);
// The activities as stored and as the API shows them: a JSON object by activity type, each
// holding the fields that are set.
[[nodiscard]] std::string encode_activities(
    const std::map<std::string, ActivityPolicy>& activities);
// The stored activities column: what does not have the documented shape is left out (a row
// written by plain SQL). None when the text is not a JSON object.
[[nodiscard]] std::optional<std::map<std::string, ActivityPolicy>> decode_activities(
    std::string_view text);

[[nodiscard]] std::string_view to_string(Ordering ordering) noexcept;
[[nodiscard]] std::string_view to_string(OnDeadLetter policy) noexcept;
// False for an unknown token.
[[nodiscard]] bool parse_ordering(std::string_view token, Ordering& ordering) noexcept;
[[nodiscard]] bool parse_on_dead_letter(std::string_view token, OnDeadLetter& policy) noexcept;

}  // namespace outboxd::store
