#include "row_validation.hpp"

#include <nlohmann/json.hpp>

#include "outboxd/store/store_error.hpp"

namespace outboxd::store {
namespace {

[[noreturn]] void reject(std::size_t index, const std::string& what) {
    throw ValidationError("row " + std::to_string(index) + ": " + what, index);
}

void check_identifier(std::size_t index, std::string_view field, std::string_view value) {
    if (value.empty()) reject(index, std::string{field} + " must not be empty");
    if (value.size() > kMaxIdentifierBytes) {
        reject(index, std::string{field} + " is longer than " +
                          std::to_string(kMaxIdentifierBytes) + " bytes");
    }
    if (value.find('\0') != std::string_view::npos) {
        reject(index, std::string{field} + " contains a NUL byte");
    }
}

void check_optional_identifier(std::size_t index, std::string_view field,
                               const std::optional<std::string>& value) {
    if (value) check_identifier(index, field, *value);
}

bool contains_nul(const nlohmann::json& value) {
    if (value.is_string()) {
        return value.get_ref<const std::string&>().find('\0') != std::string::npos;
    }
    if (value.is_object()) {
        for (const auto& [key, member] : value.items()) {
            if (key.find('\0') != std::string::npos || contains_nul(member)) return true;
        }
        return false;
    }
    if (value.is_array()) {
        for (const auto& element : value) {
            if (contains_nul(element)) return true;
        }
    }
    return false;
}

}  // namespace

void validate_new_row(const NewRow& row, std::size_t index) {
    check_identifier(index, "workflow_id", row.workflow_id);
    check_identifier(index, "activity_type", row.activity_type);
    check_identifier(index, "namespace", row.namespace_name);
    check_identifier(index, "task_queue", row.task_queue);
    check_optional_identifier(index, "dispatch_key", row.dispatch_key);
    check_optional_identifier(index, "run_id", row.run_id);
    check_optional_identifier(index, "node", row.node);
    if (row.traceparent) {
        if (auto problem = util::traceparent_problem(*row.traceparent))
            reject(index, "traceparent " + *problem);
    }
    if (row.ordinal < 0) reject(index, "ordinal must be >= 0, got " + std::to_string(row.ordinal));
    if (row.attempt < 0) reject(index, "attempt must be >= 0, got " + std::to_string(row.attempt));
    if (row.priority < kMinPriority || row.priority > kMaxPriority) {
        reject(index, "priority must be between " + std::to_string(kMinPriority) + " and " +
                          std::to_string(kMaxPriority) + ", got " + std::to_string(row.priority));
    }
    const auto input = nlohmann::json::parse(row.input_json, nullptr, /*allow_exceptions=*/false);
    if (input.is_discarded()) reject(index, "input is not valid JSON");
    // jsonb refuses the NUL code point; say so here rather than as a database error.
    if (contains_nul(input)) {
        reject(index, "input contains \\u0000, which PostgreSQL jsonb cannot store");
    }
}

}  // namespace outboxd::store
