#pragma once

// What every destination says of a task beside its body (README, "Targets"): the same header
// names on HTTP push, NATS and AMQP messages, and the templates a broker target names its
// subject, exchange or routing key with. Pure.

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "outboxd/sinks/task.hpp"

namespace outboxd::sinks {

using HeaderList = std::vector<std::pair<std::string, std::string>>;

// Outboxd-Dispatch-Key, Outboxd-Attempt, Outboxd-Delivery, Outboxd-Namespace,
// Outboxd-Workflow-Id, Outboxd-Activity-Type, Outboxd-Database, Outboxd-Task-Id and, when the
// row has one, traceparent. Values are header-safe (header_safe).
[[nodiscard]] HeaderList task_headers(const Task& task);

// `value` as a header value: bytes outside visible ASCII, and '%', percent-encoded, so that no
// key or id (any UTF-8, from plain SQL too) can break a message's framing. Bodies carry the
// fields exactly.
[[nodiscard]] std::string header_safe(std::string_view value);

// A name template over a task's fields: {namespace}, {task_queue}, {activity_type} and
// {workflow_id} stand for them; everything else is literal ("orders.{activity_type}").
// Why `text` is not one (an unknown field, a brace left open), or nothing.
[[nodiscard]] std::optional<std::string> template_problem(std::string_view text);
// The template with the task's fields put in (a checked template).
[[nodiscard]] std::string expand_template(std::string_view text, const Task& task);

}  // namespace outboxd::sinks
