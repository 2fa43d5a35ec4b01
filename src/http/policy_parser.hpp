#pragma once

// The task-policy fields of an activity's entry in a namespace body (README, "Task policy and
// heartbeats"): max_attempts, timeout_ms, heartbeat_timeout_ms, backoff.

#include <optional>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "outboxd/store/delivery_controls.hpp"

namespace outboxd::http {

// Reads field `key` of the entry named `where` ("activities.<type>") into `policy`. False
// when `key` is not a task-policy field; throws std::invalid_argument naming the field when
// its value is not allowed.
bool parse_task_policy_field(const std::string& key, const nlohmann::json& value,
                             const std::string& where, store::ActivityPolicy& policy);

}  // namespace outboxd::http
