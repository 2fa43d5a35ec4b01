#pragma once

// AMQP 0-9-1 (RabbitMQ) as a kind of destination (README, "Targets"): each task is published
// to an exchange with a routing key, both expanded from the target's templates, as a
// persistent application/json message whose message-id is the task's dispatch key and whose
// headers are the task's fields; mandatory, so that a message no queue takes comes back and
// is a dead letter. It is done on the broker's publisher confirm. Confirms are pipelined,
// many messages outstanding (rabbitmq-c, on a thread of the channel's own).

#include <optional>
#include <string>
#include <string_view>

#include "outboxd/sinks/targets/destination.hpp"

namespace outboxd::sinks::amqp {

// The longest exchange name and routing key AMQP carries (a short string).
inline constexpr std::size_t kMaxNameBytes = 255;
// What a target's routing key is when it does not say: the task's activity type.
inline constexpr std::string_view kDefaultRoutingKey = "{activity_type}";

[[nodiscard]] const targets::DestinationKind& amqp_kind();

// Why `exchange` cannot be published to: empty, longer than kMaxNameBytes, or a byte outside
// [A-Za-z0-9-_.:]. Nothing when it can.
[[nodiscard]] std::optional<std::string> exchange_problem(std::string_view exchange);
// Why `routing_key` cannot be sent: longer than kMaxNameBytes. Nothing when it can.
[[nodiscard]] std::optional<std::string> routing_key_problem(std::string_view routing_key);

}  // namespace outboxd::sinks::amqp
