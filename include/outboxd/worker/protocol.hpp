#pragma once

// The worker WebSocket protocol (README, "Worker protocol"; a public contract): one JSON object per
// text frame, each with a "type". Parsing never throws: a frame that is not a valid message yields
// a ProtocolError whose code and message name what is wrong. Used by the node and by the worker
// SDK.
//
// Batch frames (a compatible extension): {"type":"batch","frames":[<message>, …]} carries
// several messages in one frame, in order. A worker that says "batch":true in its hello may
// receive them (no larger than its hello's "max_frame_bytes", when stated); a node that
// says "batch":true in its welcome accepts them. A batch is checked whole before any of it
// is acted on: one bad message refuses the batch. A welcome never travels in a batch.

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "outboxd/sinks/task.hpp"
#include "outboxd/util/untrusted_text.hpp"

namespace outboxd::worker::protocol {

// Bounds a hello or credit frame may ask for.
inline constexpr std::int32_t kMaxCreditWindow = 10000;
// Frames nesting deeper than this are refused before they are parsed: nlohmann's parser is
// iterative but dump() recurses once per level (the bound serde_json also uses). A batch
// frame may nest two levels more than the messages it carries.
inline constexpr std::size_t kMaxNesting = 128;
// A task's input may nest this deep, so that its task frame fits within kMaxNesting.
inline constexpr std::size_t kMaxInputNesting = kMaxNesting - 1;
// Names, ids and routes in a frame from a worker (worker_id, namespaces, activity types, …)
// are refused when longer than util::kMaxIdentifierBytes, empty, not UTF-8 or holding a NUL.
using util::kMaxIdentifierBytes;
// A task id names one claim ("<row id>.<claim token>"); anything longer is not one.
inline constexpr std::size_t kMaxTaskIdBytes = 64;
// The smallest max_frame_bytes a hello may state.
inline constexpr std::int64_t kMinFrameBytes = 1024;
// The largest heartbeat progress (compact JSON, in bytes); a larger one refuses the frame.
inline constexpr std::size_t kMaxProgressBytes = 8192;
// Free text (a fail's error, an error frame's message) is cut to this length.
inline constexpr std::size_t kMaxMessageBytes = 4096;
// The largest batch frame either side writes (a single message larger than this still goes
// alone, as before). Below every default frame limit, so a reader needs no new setting.
inline constexpr std::size_t kMaxBatchBytes = std::size_t{256} * 1024;

// The largest batch to write to a peer that stated `peer_max_frame_bytes` (0: not stated).
[[nodiscard]] constexpr std::size_t batch_bytes_for(std::size_t peer_max_frame_bytes) {
    return peer_max_frame_bytes > 0 && peer_max_frame_bytes < kMaxBatchBytes ? peer_max_frame_bytes
                                                                             : kMaxBatchBytes;
}

// Error codes of {"type":"error"} frames.
namespace code {
inline constexpr std::string_view kBadJson = "bad_json";
inline constexpr std::string_view kUnknownType = "unknown_type";
inline constexpr std::string_view kMissingField = "missing_field";
inline constexpr std::string_view kInvalidField = "invalid_field";
inline constexpr std::string_view kHelloRequired = "hello_required";
inline constexpr std::string_view kDuplicateHello = "duplicate_hello";
inline constexpr std::string_view kFrameTooLarge = "frame_too_large";
inline constexpr std::string_view kUnknownTask = "unknown_task";
inline constexpr std::string_view kUnauthorized = "unauthorized";
// The credential may not do what the frame asks (a hello for a namespace outside it).
inline constexpr std::string_view kForbidden = "forbidden";
inline constexpr std::string_view kDraining = "draining";
inline constexpr std::string_view kResultRefused = "result_refused";
inline constexpr std::string_view kInternal = "internal";
// Every code, so that a node can export each one's counter from the start.
inline constexpr std::array kAll{kBadJson,       kUnknownType,    kMissingField,  kInvalidField,
                                 kHelloRequired, kDuplicateHello, kFrameTooLarge, kUnknownTask,
                                 kUnauthorized,  kForbidden,      kDraining,      kResultRefused,
                                 kInternal};
}  // namespace code

struct ProtocolError {
    std::string code;
    std::string message;
};

// --- worker -> node ----------------------------------------------------------------------
struct Hello {
    std::string worker_id;
    std::vector<std::string> namespaces{"default"};
    std::string task_queue = "default";
    std::optional<std::string> node;
    std::vector<std::string> activity_types;
    std::int32_t max_in_flight = 1;
    bool batch = false;               // accepts batch frames from the node
    std::size_t max_frame_bytes = 0;  // the largest frame the worker reads; 0: not stated
};

struct Complete {
    std::string task_id;
    std::string result_json = "null";
};

struct Fail {
    std::string task_id;
    std::string error;  // sanitized: valid UTF-8, no NUL, at most kMaxMessageBytes
    bool retryable = true;
};

struct Credit {
    std::int32_t max_in_flight = 1;
};

// Keeps a long task alive (its heartbeat_timeout_ms starts again) and may report progress.
struct Heartbeat {
    std::string task_id;
    // Compact JSON text, at most kMaxProgressBytes, without \u0000; none: no progress.
    std::optional<std::string> progress_json;
};

using WorkerMessage = std::variant<Hello, Complete, Fail, Credit, Heartbeat>;

[[nodiscard]] std::variant<WorkerMessage, ProtocolError> parse_worker_message(
    std::string_view text);
// One frame as the messages it carries: one, or the contents of a batch (never a hello).
[[nodiscard]] std::variant<std::vector<WorkerMessage>, ProtocolError> parse_worker_frame(
    std::string_view text);
[[nodiscard]] std::string encode(const Hello& hello);
[[nodiscard]] std::string encode(const Complete& complete);
[[nodiscard]] std::string encode(const Fail& fail);
[[nodiscard]] std::string encode(const Credit& credit);
[[nodiscard]] std::string encode(const Heartbeat& heartbeat);

// --- node -> worker ----------------------------------------------------------------------
// Inclusive shard ranges [lo, hi].
using ShardList = std::vector<std::pair<std::int32_t, std::int32_t>>;

// The shards a node owns in one of the databases it serves.
struct DatabaseShards {
    std::string database;
    ShardList shards;

    friend bool operator==(const DatabaseShards&, const DatabaseShards&) = default;
};

struct NodeInfo {
    std::string node_id;
    std::string url;
    // The first database's shards, and every database the node serves with its shards (nodes
    // before several databases send neither).
    ShardList shards = {};
    std::vector<DatabaseShards> databases = {};

    friend bool operator==(const NodeInfo&, const NodeInfo&) = default;
};

struct Welcome {
    std::string node_id;
    std::string session_id;
    std::vector<NodeInfo> cluster;
    bool batch = false;               // accepts batch frames from the worker
    std::size_t max_frame_bytes = 0;  // the largest frame the node reads; 0: not stated
    // The largest complete.result (compact JSON, in bytes) the node takes; 0: not stated.
    std::size_t max_result_bytes = 0;
};

// The task frame carries a sinks::Task, field for field.
using Task = sinks::Task;

struct Cluster {
    std::vector<NodeInfo> nodes;
};

struct Drain {};

// The task was settled without the worker (its workflow cancelled, its row gone, or it is
// no longer outstanding on this connection): stop it; a later answer changes nothing.
struct Cancel {
    std::string task_id;
    std::string reason;
};

struct Error {
    std::string code;
    std::string message;
};

using NodeMessage = std::variant<Welcome, Task, Cluster, Drain, Error, Cancel>;

[[nodiscard]] std::variant<NodeMessage, ProtocolError> parse_node_message(std::string_view text);
[[nodiscard]] std::variant<std::vector<NodeMessage>, ProtocolError> parse_node_frame(
    std::string_view text);
[[nodiscard]] std::string encode(const Welcome& welcome);
[[nodiscard]] std::string encode(const Task& task);
// A task's frame for a peer that reads frames up to `peer_max_frame_bytes` (0: not
// stated), or why no frame can carry it to that peer (`refused` set, `frame` empty): an
// input nesting deeper than kMaxInputNesting, a frame larger than the peer reads.
struct TaskFrame {
    std::string frame;
    std::string refused;
};
[[nodiscard]] TaskFrame encode_task_for(const Task& task, std::size_t peer_max_frame_bytes);
[[nodiscard]] std::string encode(const Cluster& cluster);
[[nodiscard]] std::string encode(const Drain& drain);
[[nodiscard]] std::string encode(const Cancel& cancel);
[[nodiscard]] std::string encode(const Error& error);

// --- either direction --------------------------------------------------------------------
// Frames already encoded, in order, as one batch frame.
[[nodiscard]] std::string encode_batch(std::span<const std::string> frames);

}  // namespace outboxd::worker::protocol
