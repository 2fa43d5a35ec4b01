#include "outboxd/sinks/task_headers.hpp"

#include <algorithm>
#include <array>

namespace outboxd::sinks {
namespace {

constexpr std::array<std::string_view, 4> kFields{"namespace", "task_queue", "activity_type",
                                                  "workflow_id"};

std::string_view field_of(const Task& task, std::string_view field) {
    if (field == "namespace") return task.namespace_name;
    if (field == "task_queue") return task.task_queue;
    if (field == "activity_type") return task.activity_type;
    return task.workflow_id;
}

}  // namespace

std::string header_safe(std::string_view value) {
    static constexpr char kHex[] = "0123456789ABCDEF";
    std::string out;
    out.reserve(value.size());
    for (const char c : value) {
        const auto byte = static_cast<unsigned char>(c);
        if (byte > 0x20 && byte < 0x7f && byte != '%') {
            out += c;
        } else {
            out += '%';
            out += kHex[byte >> 4];
            out += kHex[byte & 0xf];
        }
    }
    return out;
}

HeaderList task_headers(const Task& task) {
    HeaderList headers{
        {"Outboxd-Dispatch-Key", header_safe(task.dispatch_key)},
        {"Outboxd-Attempt", std::to_string(task.attempt)},
        {"Outboxd-Delivery", std::to_string(task.delivery)},
        {"Outboxd-Namespace", header_safe(task.namespace_name)},
        {"Outboxd-Workflow-Id", header_safe(task.workflow_id)},
        {"Outboxd-Activity-Type", header_safe(task.activity_type)},
        {"Outboxd-Database", header_safe(task.database)},
        {"Outboxd-Task-Id", header_safe(task.task_id)},
    };
    if (task.traceparent) headers.emplace_back("traceparent", header_safe(*task.traceparent));
    return headers;
}

std::optional<std::string> template_problem(std::string_view text) {
    for (std::size_t at = 0; at < text.size(); ++at) {
        if (text[at] == '}') return "'}' without '{' at byte " + std::to_string(at);
        if (text[at] != '{') continue;
        const auto end = text.find('}', at);
        if (end == std::string_view::npos) return "'{' without '}' at byte " + std::to_string(at);
        const auto field = text.substr(at + 1, end - at - 1);
        if (std::find(kFields.begin(), kFields.end(), field) == kFields.end()) {
            return "unknown field '{" + std::string{field.substr(0, 64)} +
                   "}' (known: {namespace}, {task_queue}, {activity_type}, {workflow_id})";
        }
        at = end;
    }
    return std::nullopt;
}

std::string expand_template(std::string_view text, const Task& task) {
    std::string out;
    out.reserve(text.size() + 32);
    for (std::size_t at = 0; at < text.size(); ++at) {
        const auto end = text[at] == '{' ? text.find('}', at) : std::string_view::npos;
        if (end == std::string_view::npos) {
            out += text[at];
            continue;
        }
        out += field_of(task, text.substr(at + 1, end - at - 1));
        at = end;
    }
    return out;
}

}  // namespace outboxd::sinks
