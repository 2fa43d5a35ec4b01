#pragma once

// Human tables for the operator CLI: columns padded to their widest cell, text cut to fit.

#include <iosfwd>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace outboxd::ctl {

class Table {
public:
    explicit Table(std::vector<std::string> headers) : headers_(std::move(headers)) {}
    void add(std::vector<std::string> cells) { rows_.push_back(std::move(cells)); }
    [[nodiscard]] bool empty() const { return rows_.empty(); }
    void print(std::ostream& out) const;

private:
    std::vector<std::string> headers_;
    std::vector<std::vector<std::string>> rows_;
};

// The DATABASE column of a listing (README, "Operator CLI"): its items carry "database",
// and the column is shown first when more than one database appears among them; left out
// otherwise, so that a node with one database prints what it always did.
class DatabaseColumn {
public:
    explicit DatabaseColumn(const nlohmann::json& items);
    [[nodiscard]] bool shown() const { return shown_; }
    // `rest`, after the column when it is shown.
    [[nodiscard]] std::vector<std::string> headers(std::vector<std::string> rest) const;
    [[nodiscard]] std::vector<std::string> cells(const nlohmann::json& item,
                                                 std::vector<std::string> rest) const;

private:
    bool shown_ = false;
};

// A JSON value as one table cell: strings bare, null as "-", anything else compact JSON,
// control characters replaced, at most `max_bytes` (cut with "…").
[[nodiscard]] std::string cell(const nlohmann::json& value, std::size_t max_bytes = 60);

// An object as two columns, field and value, in the object's order.
void print_fields(std::ostream& out, const nlohmann::json& object);

}  // namespace outboxd::ctl
