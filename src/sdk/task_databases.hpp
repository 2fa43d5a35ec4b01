#pragma once

// The outbox database each message of a frame from a node names: a task frame's "database",
// which worker::protocol::parse_node_frame does not keep. Read apart, from the same text.

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace outboxd::sdk::detail {

// For each of the `messages` messages of `frame` (the frame itself, or each member of a
// batch), in order: the non-empty string its "database" names, or kDefaultDatabase where it
// names none (nodes from before several databases, messages other than tasks). `frame` is a
// frame parse_node_frame accepted, with `messages` messages.
[[nodiscard]] std::vector<std::string> message_databases(std::string_view frame,
                                                         std::size_t messages);

}  // namespace outboxd::sdk::detail
