#include "table.hpp"

#include <algorithm>
#include <ostream>
#include <set>

#include <nlohmann/json.hpp>

namespace outboxd::ctl {
namespace {

// Display width in code points (good enough for the names and numbers shown here).
std::size_t width(const std::string& text) {
    return static_cast<std::size_t>(std::count_if(text.begin(), text.end(), [](char c) {
        return (static_cast<unsigned char>(c) & 0xC0) != 0x80;
    }));
}

}  // namespace

std::string cell(const nlohmann::json& value, std::size_t max_bytes) {
    std::string text;
    if (value.is_null()) {
        text = "-";
    } else if (value.is_string()) {
        text = value.get<std::string>();
    } else {
        text = value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    }
    for (auto& c : text) {
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7F) c = ' ';
    }
    if (text.size() > max_bytes) {
        std::size_t cut = max_bytes;
        while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
        text = text.substr(0, cut) + "…";
    }
    return text;
}

void Table::print(std::ostream& out) const {
    std::vector<std::size_t> widths;
    for (const auto& header : headers_) widths.push_back(width(header));
    for (const auto& row : rows_) {
        for (std::size_t i = 0; i < row.size() && i < widths.size(); ++i) {
            widths[i] = std::max(widths[i], width(row[i]));
        }
    }
    const auto line = [&](const std::vector<std::string>& cells) {
        std::string text;
        for (std::size_t i = 0; i < widths.size(); ++i) {
            const std::string& c = i < cells.size() ? cells[i] : std::string{};
            text += c;
            if (i + 1 < widths.size()) text += std::string(widths[i] - width(c) + 2, ' ');
        }
        while (text.ends_with(' ')) text.pop_back();
        out << text << '\n';
    };
    line(headers_);
    for (const auto& row : rows_) line(row);
}

DatabaseColumn::DatabaseColumn(const nlohmann::json& items) {
    if (!items.is_array()) return;
    std::set<std::string> seen;
    for (const auto& item : items) {
        if (!item.is_object()) continue;
        const auto database = item.find("database");
        if (database != item.end() && database->is_string())
            seen.insert(database->get<std::string>());
    }
    shown_ = seen.size() > 1;
}

std::vector<std::string> DatabaseColumn::headers(std::vector<std::string> rest) const {
    if (shown_) rest.insert(rest.begin(), "DATABASE");
    return rest;
}

std::vector<std::string> DatabaseColumn::cells(const nlohmann::json& item,
                                               std::vector<std::string> rest) const {
    if (shown_) rest.insert(rest.begin(), cell(item.value("database", nlohmann::json{})));
    return rest;
}

void print_fields(std::ostream& out, const nlohmann::json& object) {
    Table table{{"FIELD", "VALUE"}};
    for (const auto& [key, value] : object.items()) table.add({key, cell(value, 200)});
    table.print(out);
}

}  // namespace outboxd::ctl
