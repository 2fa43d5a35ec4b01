#pragma once

// NATS JetStream as a kind of destination (README, "NATS JetStream targets"): each task is
// published to a subject expanded from the target's template, with the task's fields as
// headers and its dispatch key as Nats-Msg-Id, and is done on the stream's PubAck. Publishes
// are asynchronous, many acks outstanding (nats.c's JetStream async publish).

#include "outboxd/sinks/targets/destination.hpp"

namespace outboxd::sinks::nats {

[[nodiscard]] const targets::DestinationKind& nats_kind();

// Why `subject` cannot be published to: empty, too long, an empty token, whitespace or a
// control byte, or a wildcard token ('*', '>'). Nothing when it can.
[[nodiscard]] std::optional<std::string> subject_problem(std::string_view subject);

}  // namespace outboxd::sinks::nats
