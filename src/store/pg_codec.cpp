#include "pg_codec.hpp"

#include "outboxd/store/store_error.hpp"

namespace outboxd::store::pg {

void ArrayLiteral::separate() {
    if (text_.size() > 1) text_ += ',';
}

ArrayLiteral& ArrayLiteral::add(std::string_view text) {
    // libpq passes parameters as C strings: a NUL would cut the literal short, and
    // PostgreSQL would refuse what is left (or, worse, read another value).
    if (text.find('\0') != std::string_view::npos) {
        throw ValidationError("text parameter contains a NUL byte");
    }
    separate();
    text_ += '"';
    for (const char c : text) {
        if (c == '"' || c == '\\') text_ += '\\';
        text_ += c;
    }
    text_ += '"';
    return *this;
}

ArrayLiteral& ArrayLiteral::add(std::int64_t value) {
    separate();
    text_ += std::to_string(value);
    return *this;
}

ArrayLiteral& ArrayLiteral::add_null() {
    separate();
    text_ += "NULL";
    return *this;
}

std::optional<std::string> optional_text(const pqxx::field& field) {
    if (field.is_null()) return std::nullopt;
    return std::string{field.c_str(), field.size()};
}

std::vector<std::string> parse_text_array(const pqxx::field& field) {
    std::vector<std::string> out;
    if (field.is_null()) return out;
    auto parser = field.as_array();
    for (auto [kind, text] = parser.get_next(); kind != pqxx::array_parser::done;
         std::tie(kind, text) = parser.get_next()) {
        if (kind == pqxx::array_parser::string_value) out.push_back(text);
    }
    return out;
}

std::optional<TimePoint> optional_instant(const pqxx::field& field) {
    if (field.is_null()) return std::nullopt;
    return from_micros(field.as<std::int64_t>());
}

}  // namespace outboxd::store::pg
