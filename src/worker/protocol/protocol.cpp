#include "outboxd/worker/protocol.hpp"

#include <algorithm>
#include <limits>

#include <nlohmann/json.hpp>

#include "outboxd/util/untrusted_text.hpp"

namespace outboxd::worker::protocol {
namespace {

using nlohmann::json;

// A batch frame wraps its messages in two more levels (the frame object and its array).
constexpr std::size_t kBatchNesting = 2;
constexpr std::string_view kBatchType = "batch";

// Thrown inside this file only, to leave a parse at the first problem.
struct Rejected {
    ProtocolError error;
};

[[noreturn]] void reject(std::string_view code, std::string message) {
    throw Rejected{{std::string{code}, std::move(message)}};
}

// Text from outside the protocol (exception messages, argv) may hold invalid UTF-8, on which
// dump() throws; encoding must not fail, so such bytes become U+FFFD.
std::string dump(const json& value) {
    return value.dump(-1, ' ', false, json::error_handler_t::replace);
}

// Names member `index` of a batch frame in a complaint: built only when there is one, not
// for every member a batch frame carries.
std::string batch_member(std::size_t index) {
    return "frames[" + std::to_string(index) + "] of a batch frame";
}

[[noreturn]] void reject_depth(std::size_t limit) {
    reject(code::kBadJson, "frame nests deeper than " + std::to_string(limit) + " levels");
}

// Typed access to the members of one frame, naming the field in every complaint.
class Fields {
public:
    // `max_bytes`: the longest name or id a frame may carry. Frames from a node carry what
    // rows hold (a dispatch_key of a 1024-byte workflow id is longer still), which a worker
    // takes as it is; frames from a worker are bounded.
    Fields(const json& object, std::string_view type, std::size_t max_bytes = kMaxIdentifierBytes)
        : object_(object), type_(type), max_bytes_(max_bytes) {}

    [[nodiscard]] const json* find(const char* name) const {
        const auto it = object_.find(name);
        return it == object_.end() || it->is_null() ? nullptr : &*it;
    }

    std::string text(const char* name) const { return text(name, max_bytes_); }
    std::string text(const char* name, std::size_t max_bytes) const {
        const json* value = find(name);
        if (!value) reject(code::kMissingField, where(name) + " is required");
        return text_of(name, *value, max_bytes);
    }

    std::optional<std::string> optional_text(const char* name) const {
        const json* value = find(name);
        if (!value) return std::nullopt;
        return text_of(name, *value, max_bytes_);
    }

    // Free text (a message) may be absent, null or empty; it is made safe to store and
    // show (no NUL, valid UTF-8, at most kMaxMessageBytes) rather than refused. With
    // `any_json`, a value that is not a string is kept as its JSON text.
    std::string free_text(const char* name, bool any_json = false) const {
        const json* value = find(name);
        if (!value) return {};
        if (value->is_string()) {
            return util::sanitize_text(value->get_ref<const std::string&>(), kMaxMessageBytes);
        }
        if (!any_json) reject(code::kInvalidField, where(name) + " must be a string");
        return util::sanitize_text(dump(*value), kMaxMessageBytes);
    }

    std::int64_t integer(const char* name, std::int64_t lo, std::int64_t hi) const {
        const json* value = find(name);
        if (!value) reject(code::kMissingField, where(name) + " is required");
        return integer_of(name, *value, lo, hi);
    }

    std::optional<std::int64_t> optional_integer(const char* name, std::int64_t lo,
                                                 std::int64_t hi) const {
        const json* value = find(name);
        if (!value) return std::nullopt;
        return integer_of(name, *value, lo, hi);
    }

    std::optional<bool> optional_boolean(const char* name) const {
        const json* value = find(name);
        if (!value) return std::nullopt;
        if (!value->is_boolean()) reject(code::kInvalidField, where(name) + " must be a boolean");
        return value->get<bool>();
    }

    std::optional<std::vector<std::string>> optional_texts(const char* name) const {
        const json* value = find(name);
        if (!value) return std::nullopt;
        if (!value->is_array()) {
            reject(code::kInvalidField, where(name) + " must be an array of strings");
        }
        std::vector<std::string> out;
        for (const auto& element : *value) out.push_back(text_of(name, element, max_bytes_));
        return out;
    }

    std::string raw(const char* name) const {
        const auto it = object_.find(name);
        return it == object_.end() ? "null" : dump(*it);
    }

private:
    std::string where(const char* name) const {
        return "'" + std::string{name} + "' of a " + std::string{type_} + " frame";
    }

    // Names, ids and routes end up in SQL parameters and log lines: refused unless they are
    // non-empty UTF-8 without NUL bytes, and bounded.
    std::string text_of(const char* name, const json& value, std::size_t max_bytes) const {
        if (!value.is_string()) reject(code::kInvalidField, where(name) + " must be a string");
        auto text = value.get<std::string>();
        if (text.empty()) reject(code::kInvalidField, where(name) + " must not be empty");
        if (const auto problem = util::identifier_problem(text, max_bytes)) {
            reject(code::kInvalidField, where(name) + " " + *problem);
        }
        return text;
    }

    std::int64_t integer_of(const char* name, const json& value, std::int64_t lo,
                            std::int64_t hi) const {
        if (!value.is_number_integer()) {
            reject(code::kInvalidField, where(name) + " must be an integer");
        }
        const auto number = value.get<std::int64_t>();
        if (number < lo || number > hi || (value.is_number_unsigned() && number < 0)) {
            reject(code::kInvalidField, where(name) + " must be between " + std::to_string(lo) +
                                            " and " + std::to_string(hi));
        }
        return number;
    }

    const json& object_;
    std::string_view type_;
    std::size_t max_bytes_;
};

std::pair<json, std::string> parse_object(std::string_view text) {
    // A batch may nest two levels deeper than the messages it carries; nothing else may.
    const auto depth = util::json_nesting_depth(text, kMaxNesting + kBatchNesting);
    if (depth > kMaxNesting + kBatchNesting) reject_depth(kMaxNesting + kBatchNesting);
    json object = json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (object.is_discarded()) reject(code::kBadJson, "frame is not valid JSON");
    if (!object.is_object()) reject(code::kBadJson, "frame must be a JSON object");
    const auto type = object.find("type");
    if (type == object.end()) reject(code::kMissingField, "'type' is required");
    if (!type->is_string()) reject(code::kInvalidField, "'type' must be a string");
    auto name = type->get<std::string>();
    if (depth > kMaxNesting && name != kBatchType) reject_depth(kMaxNesting);
    return {std::move(object), std::move(name)};
}

WorkerMessage parse_worker(const json& object, const std::string& type) {
    const Fields f{object, type};
    if (type == "hello") {
        Hello hello;
        hello.worker_id = f.text("worker_id");
        if (auto ns = f.optional_texts("namespaces")) {
            if (ns->empty()) {
                reject(code::kInvalidField, "'namespaces' of a hello frame must not be empty");
            }
            hello.namespaces = std::move(*ns);
        }
        if (auto queue = f.optional_text("task_queue")) hello.task_queue = std::move(*queue);
        hello.node = f.optional_text("node");
        auto types = f.optional_texts("activity_types");
        if (!types) reject(code::kMissingField, "'activity_types' of a hello frame is required");
        if (types->empty()) {
            reject(code::kInvalidField,
                   "'activity_types' of a hello frame must list at least one activity type");
        }
        hello.activity_types = std::move(*types);
        hello.max_in_flight = static_cast<std::int32_t>(
            f.optional_integer("max_in_flight", 1, kMaxCreditWindow).value_or(1));
        hello.batch = f.optional_boolean("batch").value_or(false);
        // A worker that reads almost nothing would have every row it is sent dead-lettered
        // (its frame too large): the smallest frame the node itself may be set to read.
        hello.max_frame_bytes = static_cast<std::size_t>(
            f.optional_integer("max_frame_bytes", kMinFrameBytes, INT64_MAX).value_or(0));
        return hello;
    }
    if (type == "complete") return Complete{f.text("task_id", kMaxTaskIdBytes), f.raw("result")};
    if (type == "fail") {
        return Fail{f.text("task_id", kMaxTaskIdBytes), f.free_text("error", /*any_json=*/true),
                    f.optional_boolean("retryable").value_or(true)};
    }
    if (type == "credit") {
        return Credit{static_cast<std::int32_t>(f.integer("max_in_flight", 0, kMaxCreditWindow))};
    }
    if (type == "heartbeat") {
        Heartbeat beat{f.text("task_id", kMaxTaskIdBytes), std::nullopt};
        if (auto progress = f.raw("progress"); progress != "null") {
            if (progress.size() > kMaxProgressBytes) {
                reject(code::kInvalidField,
                       "'progress' of a heartbeat frame is " + std::to_string(progress.size()) +
                           " bytes, at most " + std::to_string(kMaxProgressBytes));
            }
            if (util::json_text_has_nul(progress)) {
                reject(code::kInvalidField,
                       "'progress' of a heartbeat frame contains \\u0000, which cannot be stored");
            }
            beat.progress_json = std::move(progress);
        }
        return beat;
    }
    reject(code::kUnknownType, "unknown frame type '" + type + "'");
}

// An entry's "shards": [[lo, hi], …]; anything else reads as none (it is only informative).
ShardList parse_shards(const json& entry) {
    ShardList shards;
    const auto it = entry.find("shards");
    if (it == entry.end() || !it->is_array()) return shards;
    for (const auto& range : *it) {
        if (range.is_array() && range.size() == 2 && range[0].is_number_integer() &&
            range[1].is_number_integer()) {
            shards.emplace_back(range[0].get<std::int32_t>(), range[1].get<std::int32_t>());
        }
    }
    return shards;
}

std::vector<NodeInfo> parse_nodes(const json& object, const char* name, std::string_view type) {
    const auto it = object.find(name);
    if (it == object.end() || it->is_null()) return {};
    if (!it->is_array())
        reject(code::kInvalidField, "'" + std::string{name} + "' must be an array");
    std::vector<NodeInfo> nodes;
    for (const auto& element : *it) {
        if (!element.is_object()) reject(code::kInvalidField, "cluster entries must be objects");
        const Fields f{element, type, std::numeric_limits<std::size_t>::max()};
        NodeInfo node{f.text("node_id"), f.text("url"), {}, {}};
        node.shards = parse_shards(element);
        if (const auto databases = element.find("databases");
            databases != element.end() && databases->is_array()) {
            for (const auto& entry : *databases) {
                if (!entry.is_object()) {
                    reject(code::kInvalidField, "cluster databases must be objects");
                }
                const Fields d{entry, type, std::numeric_limits<std::size_t>::max()};
                node.databases.push_back({d.text("database"), parse_shards(entry)});
            }
        }
        nodes.push_back(std::move(node));
    }
    return nodes;
}

NodeMessage parse_node(const json& object, const std::string& type) {
    const Fields f{object, type, std::numeric_limits<std::size_t>::max()};
    if (type == "welcome") {
        return Welcome{f.text("node_id"),
                       f.text("session_id"),
                       parse_nodes(object, "cluster", type),
                       f.optional_boolean("batch").value_or(false),
                       static_cast<std::size_t>(
                           f.optional_integer("max_frame_bytes", 0, INT64_MAX).value_or(0)),
                       static_cast<std::size_t>(
                           f.optional_integer("max_result_bytes", 0, INT64_MAX).value_or(0))};
    }
    if (type == "task") {
        Task task;
        task.task_id = f.text("task_id");
        // Nodes before several databases leave it out.
        task.database = f.optional_text("database").value_or("default");
        task.dispatch_key = f.text("dispatch_key");
        task.workflow_id = f.text("workflow_id");
        task.ordinal = f.integer("ordinal", 0, INT64_MAX);
        task.run_id = f.optional_text("run_id");
        task.namespace_name = f.text("namespace");
        task.task_queue = f.text("task_queue");
        task.node = f.optional_text("node");
        task.activity_type = f.text("activity_type");
        task.input_json = f.raw("input");
        task.attempt = f.integer("attempt", 1, std::int64_t{INT32_MAX} + 1);
        // Nodes before the delivery count leave it out (0: unknown).
        task.delivery = f.optional_integer("delivery", 0, INT32_MAX).value_or(0);
        task.timeout_ms = f.optional_integer("timeout_ms", 0, INT64_MAX).value_or(0);
        task.heartbeat_timeout_ms = f.optional_integer("heartbeat_timeout_ms", 1, INT64_MAX);
        task.priority = f.optional_integer("priority", 0, INT64_MAX).value_or(0);
        task.traceparent = f.optional_text("traceparent");
        return task;
    }
    if (type == "cluster") return Cluster{parse_nodes(object, "nodes", type)};
    if (type == "drain") return Drain{};
    if (type == "cancel") {
        return Cancel{f.text("task_id"), f.free_text("reason")};
    }
    if (type == "error") {
        // encode(Error) writes "message":"" for an empty message; it must parse back.
        return Error{f.optional_text("code").value_or("unknown"), f.free_text("message")};
    }
    reject(code::kUnknownType, "unknown frame type '" + type + "'");
}

json shards_json(const ShardList& shards) {
    json out = json::array();
    for (const auto& [lo, hi] : shards) out.push_back({lo, hi});
    return out;
}

json nodes_json(const std::vector<NodeInfo>& nodes) {
    json out = json::array();
    for (const auto& n : nodes) {
        json node{{"node_id", n.node_id}, {"url", n.url}};
        if (!n.databases.empty()) {
            node["shards"] = shards_json(n.shards);
            json databases = json::array();
            for (const auto& d : n.databases) {
                databases.push_back({{"database", d.database}, {"shards", shards_json(d.shards)}});
            }
            node["databases"] = std::move(databases);
        }
        out.push_back(std::move(node));
    }
    return out;
}

json optional_json(const std::optional<std::string>& text) {
    return text ? json(*text) : json(nullptr);
}

// The messages of a frame: the frame itself, or each member of a batch, parsed by `parse`.
// A member that cannot be parsed refuses the whole batch, naming its index.
template <typename Message, typename Parse>
std::vector<Message> frame_messages(std::string_view text, Parse parse) {
    const auto [object, type] = parse_object(text);
    std::vector<Message> messages;
    if (type != kBatchType) {
        messages.push_back(parse(object, type));
        return messages;
    }
    const auto frames = object.find("frames");
    if (frames == object.end() || frames->is_null()) {
        reject(code::kMissingField, "'frames' of a batch frame is required");
    }
    if (!frames->is_array() || frames->empty()) {
        reject(code::kInvalidField, "'frames' of a batch frame must be a non-empty array");
    }
    messages.reserve(frames->size());
    for (std::size_t i = 0; i < frames->size(); ++i) {
        const json& member = (*frames)[i];
        const auto member_type = member.is_object() ? member.find("type") : member.end();
        if (!member.is_object() || member_type == member.end() || !member_type->is_string()) {
            reject(code::kInvalidField,
                   batch_member(i) + " must be an object with a string 'type'");
        }
        const auto name = member_type->get<std::string>();
        if (name == kBatchType || name == "hello" || name == "welcome") {
            reject(code::kInvalidField,
                   batch_member(i).append(" cannot be a ").append(name).append(" frame"));
        }
        try {
            messages.push_back(parse(member, name));
        } catch (Rejected& rejected) {
            rejected.error.message.insert(0, batch_member(i) + ": ");
            throw;
        }
    }
    return messages;
}

template <typename Result, typename Body>
std::variant<Result, ProtocolError> parsed(Body body) {
    try {
        return body();
    } catch (const Rejected& rejected) {
        return rejected.error;
    } catch (const std::exception& error) {
        return ProtocolError{std::string{code::kInvalidField}, error.what()};
    }
}

}  // namespace

std::variant<std::vector<WorkerMessage>, ProtocolError> parse_worker_frame(std::string_view text) {
    return parsed<std::vector<WorkerMessage>>(
        [text] { return frame_messages<WorkerMessage>(text, parse_worker); });
}

std::variant<std::vector<NodeMessage>, ProtocolError> parse_node_frame(std::string_view text) {
    return parsed<std::vector<NodeMessage>>(
        [text] { return frame_messages<NodeMessage>(text, parse_node); });
}

std::string encode_batch(std::span<const std::string> frames) {
    std::size_t size = 32;
    for (const auto& frame : frames) size += frame.size() + 1;
    std::string out;
    out.reserve(size);
    out += R"({"type":"batch","frames":[)";
    for (std::size_t i = 0; i < frames.size(); ++i) {
        if (i > 0) out += ',';
        out += frames[i];
    }
    out += "]}";
    return out;
}

std::variant<WorkerMessage, ProtocolError> parse_worker_message(std::string_view text) {
    return parsed<WorkerMessage>([text] {
        const auto [object, type] = parse_object(text);
        return parse_worker(object, type);
    });
}

std::variant<NodeMessage, ProtocolError> parse_node_message(std::string_view text) {
    return parsed<NodeMessage>([text] {
        const auto [object, type] = parse_object(text);
        return parse_node(object, type);
    });
}

std::string encode(const Hello& hello) {
    json frame{{"type", "hello"},
               {"worker_id", hello.worker_id},
               {"namespaces", hello.namespaces},
               {"task_queue", hello.task_queue},
               {"node", optional_json(hello.node)},
               {"activity_types", hello.activity_types},
               {"max_in_flight", hello.max_in_flight}};
    if (hello.batch) frame["batch"] = true;
    if (hello.max_frame_bytes > 0) frame["max_frame_bytes"] = hello.max_frame_bytes;
    return dump(frame);
}

std::string encode(const Complete& complete) {
    // The result travels as the worker gave it; it must be valid JSON.
    return R"({"type":"complete","task_id":)" + dump(complete.task_id) + R"(,"result":)" +
           (complete.result_json.empty() ? "null" : complete.result_json) + "}";
}

std::string encode(const Fail& fail) {
    return dump(json{{"type", "fail"},
                     {"task_id", fail.task_id},
                     {"error", fail.error},
                     {"retryable", fail.retryable}});
}

std::string encode(const Credit& credit) {
    return dump(json{{"type", "credit"}, {"max_in_flight", credit.max_in_flight}});
}

std::string encode(const Heartbeat& heartbeat) {
    // The progress travels as the worker gave it; it must be valid JSON.
    std::string out = R"({"type":"heartbeat","task_id":)" + dump(heartbeat.task_id);
    if (heartbeat.progress_json) out += R"(,"progress":)" + *heartbeat.progress_json;
    return out + "}";
}

std::string encode(const Welcome& welcome) {
    json frame{{"type", "welcome"},
               {"node_id", welcome.node_id},
               {"session_id", welcome.session_id},
               {"cluster", nodes_json(welcome.cluster)}};
    if (welcome.batch) frame["batch"] = true;
    if (welcome.max_frame_bytes > 0) frame["max_frame_bytes"] = welcome.max_frame_bytes;
    if (welcome.max_result_bytes > 0) frame["max_result_bytes"] = welcome.max_result_bytes;
    return dump(frame);
}

namespace {

// Appends `text` as a JSON string. Strings of a task come from PostgreSQL, which stores only
// valid UTF-8, so bytes >= 0x80 pass through; control characters, quotes and backslashes
// are escaped.
void append_json_string(std::string& out, std::string_view text) {
    static constexpr char kHex[] = "0123456789abcdef";
    out += '"';
    // Runs that need no escape (nearly every text) go in whole.
    std::size_t run = 0;
    for (std::size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        const auto byte = static_cast<unsigned char>(c);
        if (byte >= 0x20 && c != '"' && c != '\\') continue;
        out.append(text.substr(run, i - run));
        run = i + 1;
        if (byte < 0x20) {
            out += "\\u00";
            out += kHex[byte >> 4];
            out += kHex[byte & 0xf];
        } else {
            out += '\\';
            out += c;
        }
    }
    out.append(text.substr(run));
    out += '"';
}

void append_field(std::string& out, std::string_view name, std::string_view text) {
    out += ",\"";
    out += name;
    out += "\":";
    append_json_string(out, text);
}

void append_field(std::string& out, std::string_view name, const std::optional<std::string>& text) {
    if (text) return append_field(out, name, std::string_view{*text});
    out += ",\"";
    out += name;
    out += "\":null";
}

void append_field(std::string& out, std::string_view name, std::int64_t number) {
    out += ",\"";
    out += name;
    out += "\":";
    out += std::to_string(number);
}

}  // namespace

std::string encode(const Task& task) {
    // Hot path (one frame per dispatched row): built directly, no JSON tree; the input is
    // spliced as stored (jsonb text) instead of parsed and re-dumped.
    std::string out;
    out.reserve(240 + task.task_id.size() + task.database.size() + 2 * task.dispatch_key.size() +
                task.input_json.size());
    out += R"({"type":"task")";
    append_field(out, "task_id", std::string_view{task.task_id});
    append_field(out, "database", std::string_view{task.database});
    append_field(out, "dispatch_key", std::string_view{task.dispatch_key});
    append_field(out, "workflow_id", std::string_view{task.workflow_id});
    append_field(out, "ordinal", task.ordinal);
    append_field(out, "run_id", task.run_id);
    append_field(out, "namespace", std::string_view{task.namespace_name});
    append_field(out, "task_queue", std::string_view{task.task_queue});
    append_field(out, "node", task.node);
    append_field(out, "activity_type", std::string_view{task.activity_type});
    out += R"(,"input":)";
    out += task.input_json.empty() ? "null" : task.input_json;
    append_field(out, "attempt", task.attempt);
    append_field(out, "delivery", task.delivery);
    append_field(out, "timeout_ms", task.timeout_ms);
    if (task.heartbeat_timeout_ms) {
        append_field(out, "heartbeat_timeout_ms", *task.heartbeat_timeout_ms);
    }
    append_field(out, "priority", task.priority);
    if (task.traceparent) append_field(out, "traceparent", std::string_view{*task.traceparent});
    out += '}';
    return out;
}

TaskFrame encode_task_for(const Task& task, std::size_t peer_max_frame_bytes) {
    if (util::json_nesting_depth(task.input_json, kMaxInputNesting) > kMaxInputNesting) {
        return {{},
                "input nests deeper than " + std::to_string(kMaxInputNesting) +
                    " levels, which no task frame may carry"};
    }
    auto frame = encode(task);
    // A worker that said how large a frame it reads would drop the connection on a larger
    // one, and every task on it with it.
    if (peer_max_frame_bytes > 0 && frame.size() > peer_max_frame_bytes) {
        return {{},
                "the task frame is " + std::to_string(frame.size()) + " bytes, more than the " +
                    std::to_string(peer_max_frame_bytes) + " the worker reads"};
    }
    return {std::move(frame), {}};
}

std::string encode(const Cluster& cluster) {
    return dump(json{{"type", "cluster"}, {"nodes", nodes_json(cluster.nodes)}});
}

std::string encode(const Drain&) { return R"({"type":"drain"})"; }

std::string encode(const Cancel& cancel) {
    return dump(json{{"type", "cancel"}, {"task_id", cancel.task_id}, {"reason", cancel.reason}});
}

std::string encode(const Error& error) {
    return dump(json{{"type", "error"}, {"code", error.code}, {"message", error.message}});
}

}  // namespace outboxd::worker::protocol
