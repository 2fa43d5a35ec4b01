#pragma once

// HTTP push as a kind of destination (README, "HTTP push"): each task is POSTed, as the task's
// JSON, to the target's URL.

#include "outboxd/sinks/targets/destination.hpp"

namespace outboxd::sinks::http_push {

[[nodiscard]] const targets::DestinationKind& http_kind();

}  // namespace outboxd::sinks::http_push
