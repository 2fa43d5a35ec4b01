#pragma once

// What one task of an activity type runs under (README, "Task policy and heartbeats"): its
// attempts, backoff, timeout and heartbeat timeout. Each comes from the type's entry of the
// namespace's "activities", else from its "*" entry, else from the node's settings; a backoff
// falls back part by part.
//
// Pure.

#include <chrono>
#include <cstdint>
#include <optional>
#include <string_view>

#include "outboxd/config/defaults.hpp"
#include "outboxd/store/delivery_controls.hpp"
#include "outboxd/util/backoff.hpp"

namespace outboxd::dispatch {

struct FailurePolicy {
    std::int32_t max_attempts = 10;
    util::Backoff backoff;
};

// The node's settings (OUTBOXD_MAX_ATTEMPTS, OUTBOXD_BACKOFF_*, OUTBOXD_TASK_TIMEOUT_MS).
struct TaskDefaults {
    FailurePolicy failure;
    std::chrono::milliseconds timeout{defaults::kTaskTimeout};
};

struct TaskPolicy {
    FailurePolicy failure;
    // The attempt's limit. For a heartbeating task it is a total limit only when the policy
    // sets timeout_ms; otherwise none (`timeout` is then zero).
    std::chrono::milliseconds timeout{0};
    std::optional<std::chrono::milliseconds> heartbeat_timeout;
    // Whether anything differs from the node's settings.
    bool own = false;
};

[[nodiscard]] TaskPolicy task_policy(const store::DeliveryControls& controls,
                                     std::string_view activity_type, const TaskDefaults& node);

}  // namespace outboxd::dispatch
