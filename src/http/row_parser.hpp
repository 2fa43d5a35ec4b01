#pragma once

// Parsing and validation of API request bodies into store values. Never throws: a bad body
// yields a RowError naming the field (and the row of a staging batch).

#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "outboxd/store/admin_store.hpp"

namespace outboxd::http {

struct RowError {
    std::string code;  // invalid_json | invalid_request | invalid_row
    std::string message;
    std::optional<std::size_t> row;
};

[[nodiscard]] std::variant<std::vector<store::NewRow>, RowError> parse_stage_request(
    const std::string& body, std::size_t max_rows);

[[nodiscard]] std::variant<store::NamespaceSettings, RowError> parse_namespace_request(
    const std::string& name, const std::string& body);

}  // namespace outboxd::http
