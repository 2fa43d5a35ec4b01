// The worker WebSocket protocol's frame decoders, on one text frame as a peer could send it.
//
// Oracles beyond "no crash, no sanitizer report":
//  - a refusal carries one of the parser's own error codes, never a library exception's text
//    (that would mean a check is missing and a catch-all hid it);
//  - whatever parse_worker_frame / parse_node_frame accepts re-encodes (protocol::encode) to
//    frames that parse again to the same messages, one by one and as one batch;
//  - a frame parse_*_message accepts parses the same through parse_*_frame.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <tuple>
#include <variant>
#include <vector>

#include "fuzz_check.hpp"
#include "outboxd/worker/protocol.hpp"

namespace {

namespace protocol = outboxd::worker::protocol;
using outboxd::fuzz::broken;
using outboxd::fuzz::require;

// Every field of each message, so that `==` compares them all.
auto fields(const protocol::Hello& m) {
    return std::tie(m.worker_id, m.namespaces, m.task_queue, m.node, m.activity_types,
                    m.max_in_flight, m.batch, m.max_frame_bytes);
}
auto fields(const protocol::Complete& m) { return std::tie(m.task_id, m.result_json); }
auto fields(const protocol::Fail& m) { return std::tie(m.task_id, m.error, m.retryable); }
auto fields(const protocol::Credit& m) { return std::tie(m.max_in_flight); }
auto fields(const protocol::Heartbeat& m) { return std::tie(m.task_id, m.progress_json); }
auto fields(const protocol::Welcome& m) {
    return std::tie(m.node_id, m.session_id, m.cluster, m.batch, m.max_frame_bytes);
}
auto fields(const protocol::Task& m) {
    return std::tie(m.task_id, m.dispatch_key, m.workflow_id, m.ordinal, m.run_id, m.namespace_name,
                    m.task_queue, m.node, m.activity_type, m.input_json, m.attempt, m.timeout_ms,
                    m.heartbeat_timeout_ms, m.priority, m.traceparent);
}
auto fields(const protocol::Cluster& m) { return std::tie(m.nodes); }
auto fields(const protocol::Drain&) { return std::tuple<>{}; }
auto fields(const protocol::Error& m) { return std::tie(m.code, m.message); }
auto fields(const protocol::Cancel& m) { return std::tie(m.task_id, m.reason); }

template <typename Message>
bool same(const Message& a, const Message& b) {
    if (a.index() != b.index()) return false;
    return std::visit(
        [&b](const auto& left) {
            const auto& right = std::get<std::decay_t<decltype(left)>>(b);
            return fields(left) == fields(right);
        },
        a);
}

template <typename Message>
bool same(const std::vector<Message>& a, const std::vector<Message>& b) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i) {
        if (!same(a[i], b[i])) return false;
    }
    return true;
}

void check_refusal(const protocol::ProtocolError& error, std::string_view frame) {
    const bool known =
        error.code == protocol::code::kBadJson || error.code == protocol::code::kUnknownType ||
        error.code == protocol::code::kMissingField || error.code == protocol::code::kInvalidField;
    require(known, "a refused frame names one of the parser's error codes",
            error.code + " for " + std::string{frame});
    require(!error.message.starts_with("[json.exception"),
            "a refusal comes from the parser's own checks, not from a library exception",
            error.message);
}

// Batches carry every message but a hello or a welcome, which travel alone.
bool may_batch(const protocol::WorkerMessage& m) {
    return !std::holds_alternative<protocol::Hello>(m);
}
bool may_batch(const protocol::NodeMessage& m) {
    return !std::holds_alternative<protocol::Welcome>(m);
}

template <typename Message, typename Parse>
void check_round_trip(const std::vector<Message>& messages, Parse parse, std::string_view frame) {
    std::vector<std::string> encoded;
    encoded.reserve(messages.size());
    bool batchable = true;
    for (const auto& message : messages) {
        encoded.push_back(std::visit([](const auto& m) { return protocol::encode(m); }, message));
        batchable = batchable && may_batch(message);
    }
    for (std::size_t i = 0; i < messages.size(); ++i) {
        const auto again = parse(encoded[i]);
        const auto* parsed = std::get_if<std::vector<Message>>(&again);
        if (!parsed) {
            broken("an accepted message re-encodes to a frame that parses again",
                   "frame: " + std::string{frame} + " | re-encoded: " + encoded[i] +
                       " | refused: " + std::get<protocol::ProtocolError>(again).message);
        }
        require(parsed->size() == 1 && same((*parsed)[0], messages[i]),
                "an accepted message re-encodes to the same message",
                "frame: " + std::string{frame} + " | re-encoded: " + encoded[i]);
    }
    if (!batchable) return;
    const auto batch = protocol::encode_batch(encoded);
    const auto again = parse(batch);
    const auto* parsed = std::get_if<std::vector<Message>>(&again);
    if (!parsed) {
        broken("accepted messages re-encoded as one batch parse again",
               "frame: " + std::string{frame} + " | batch: " + batch +
                   " | refused: " + std::get<protocol::ProtocolError>(again).message);
    }
    require(same(*parsed, messages), "accepted messages re-encoded as one batch are the same",
            "frame: " + std::string{frame} + " | batch: " + batch);
}

template <typename Message, typename ParseFrame, typename ParseMessage>
void check_decoder(std::string_view frame, ParseFrame parse_frame, ParseMessage parse_message) {
    const auto result = parse_frame(frame);
    if (const auto* error = std::get_if<protocol::ProtocolError>(&result)) {
        check_refusal(*error, frame);
    } else {
        const auto& messages = std::get<std::vector<Message>>(result);
        require(!messages.empty(), "an accepted frame carries at least one message");
        check_round_trip(messages, parse_frame, frame);
    }

    const auto single = parse_message(frame);
    if (const auto* error = std::get_if<protocol::ProtocolError>(&single)) {
        check_refusal(*error, frame);
        return;
    }
    const auto* messages = std::get_if<std::vector<Message>>(&result);
    require(messages && messages->size() == 1 && same((*messages)[0], std::get<Message>(single)),
            "a frame parse_*_message accepts is the same one message through parse_*_frame",
            std::string{frame});
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view frame{reinterpret_cast<const char*>(data), size};
    check_decoder<protocol::WorkerMessage>(frame, protocol::parse_worker_frame,
                                           protocol::parse_worker_message);
    check_decoder<protocol::NodeMessage>(frame, protocol::parse_node_frame,
                                         protocol::parse_node_message);
    return 0;
}
