#include "dead_letter_params.hpp"

#include <charconv>
#include <limits>
#include <set>

#include <nlohmann/json.hpp>

#include "database_param.hpp"
#include "outboxd/util/untrusted_text.hpp"

namespace outboxd::http {
namespace {

using nlohmann::json;

// Ten years: older_than_s beyond it matches nothing a retention policy would keep anyway.
constexpr std::int64_t kMaxAgeSeconds = std::int64_t{10} * 365 * 24 * 3600;

std::optional<std::int64_t> whole_number(const std::string& text) {
    std::int64_t value = 0;
    const auto* end = text.data() + text.size();
    const auto [at, ec] = std::from_chars(text.data(), end, value);
    if (ec != std::errc{} || at != end || text.empty()) return std::nullopt;
    return value;
}

// A filter's text (a namespace, an activity type, a piece of an error) as identifiers are
// checked where rows enter: not empty (leave it out to match any), bounded, UTF-8, no NUL.
std::optional<std::string> text_problem(const std::string& field, const std::string& value) {
    if (auto problem = util::identifier_problem(value, util::kMaxIdentifierBytes))
        return "'" + field + "' " + *problem;
    return std::nullopt;
}

std::optional<std::string> age_problem(const std::string& field, std::int64_t value) {
    if (value < 0 || value > kMaxAgeSeconds)
        return "'" + field + "' must be between 0 and " + std::to_string(kMaxAgeSeconds);
    return std::nullopt;
}

}  // namespace

std::string encode_cursor(const store::DeadLetterCursor& cursor) {
    return std::to_string(cursor.failed_at.time_since_epoch().count()) + "." +
           std::to_string(cursor.id);
}

std::optional<store::DeadLetterCursor> decode_cursor(const std::string& text) {
    const auto dot = text.find('.');
    if (dot == std::string::npos) return std::nullopt;
    const auto micros = whole_number(text.substr(0, dot));
    const auto id = whole_number(text.substr(dot + 1));
    if (!micros || !id || *id < 0) return std::nullopt;
    return store::DeadLetterCursor{store::TimePoint{std::chrono::microseconds{*micros}}, *id};
}

std::string encode_page_cursor(const PageCursor& cursor) {
    auto text = encode_cursor(cursor.at);
    if (cursor.database) text += "." + *cursor.database;
    return text;
}

std::optional<PageCursor> decode_page_cursor(const std::string& text) {
    // A database name holds no '.': the second one, if any, starts it.
    const auto first = text.find('.');
    const auto second = first == std::string::npos ? first : text.find('.', first + 1);
    auto at = decode_cursor(text.substr(0, second));
    if (!at) return std::nullopt;
    if (second == std::string::npos) return PageCursor{*at, std::nullopt};
    auto database = text.substr(second + 1);
    if (!is_database_name(database)) return std::nullopt;
    return PageCursor{*at, std::move(database)};
}

bool listed_before(const std::string& da, const store::DeadLetter& a, const std::string& db,
                   const store::DeadLetter& b) {
    if (a.failed_at != b.failed_at) {
        if (!a.failed_at || !b.failed_at) return !a.failed_at;
        return *a.failed_at > *b.failed_at;
    }
    if (da != db) return da < db;
    return a.id > b.id;
}

store::DeadLetterCursor cursor_within(const std::string& database, const PageCursor& after) {
    if (!after.database || *after.database == database) return after.at;
    // On the cursor's failed_at, a database named before the cursor's has shown every letter
    // (only earlier ones remain), one named after it none (all of them remain).
    const bool shown = database < *after.database;
    return {after.at.failed_at, shown ? std::numeric_limits<std::int64_t>::min()
                                      : std::numeric_limits<std::int64_t>::max()};
}

std::variant<DeadLetterQuery, std::string> parse_dead_letter_query(
    const std::map<std::string, std::string>& query, std::int32_t max_limit) {
    static const std::set<std::string> known{"namespace",    "activity_type", "error",
                                             "older_than_s", "limit",         "after"};
    DeadLetterQuery out;
    for (const auto& [key, value] : query) {
        if (key == kDatabaseParam) continue;  // the router's
        if (!known.contains(key)) {
            return "unknown parameter '" + util::sanitize_text(key, 80) +
                   "'; use namespace, activity_type, error, older_than_s, limit, after or "
                   "database";
        }
        if (value.empty()) continue;  // `?namespace=`: as if left out
        if (key == "namespace" || key == "activity_type" || key == "error") {
            if (auto problem = text_problem(key, value)) return *problem;
            (key == "error"       ? out.filter.error_contains
             : key == "namespace" ? out.filter.namespace_name
                                  : out.filter.activity_type) = value;
        } else if (key == "older_than_s") {
            const auto age = whole_number(value);
            if (!age) return "'older_than_s' must be a whole number of seconds";
            if (auto problem = age_problem(key, *age)) return *problem;
            out.filter.older_than_s = *age;
        } else if (key == "limit") {
            const auto limit = whole_number(value);
            if (!limit || *limit < 1 || *limit > max_limit)
                return "'limit' must be an integer between 1 and " + std::to_string(max_limit);
            out.limit = static_cast<std::int32_t>(*limit);
        } else {
            out.after = decode_page_cursor(value);
            if (!out.after) return "'after' must be the 'next' cursor of an earlier page";
        }
    }
    return out;
}

std::variant<DeadLetterBulk, std::string> parse_dead_letter_bulk(const std::string& body) {
    DeadLetterBulk out;
    if (body.empty()) return out;
    if (util::json_nesting_depth(body, 8) > 8) return "request body nests too deep";
    const auto request = json::parse(body, nullptr, /*allow_exceptions=*/false);
    if (request.is_discarded()) return "request body is not valid JSON";
    if (!request.is_object()) return "request body must be an object";
    static const std::set<std::string> known{"namespace", "activity_type", "error_contains",
                                             "older_than_s", "limit"};
    for (const auto& [key, value] : request.items()) {
        if (!known.contains(key)) {
            return "unknown field '" + util::sanitize_text(key, 80) +
                   "'; use namespace, activity_type, error_contains, older_than_s or limit";
        }
        if (value.is_null()) continue;
        if (key == "older_than_s" || key == "limit") {
            if (!value.is_number_integer()) return "'" + key + "' must be an integer";
            if (value.is_number_unsigned() && value.get<std::uint64_t>() > INT64_MAX)
                return "'" + key + "' is too large";
            const auto number = value.get<std::int64_t>();
            if (key == "limit") {
                if (number < 1 || number > store::kMaxBulkRows)
                    return "'limit' must be between 1 and " + std::to_string(store::kMaxBulkRows);
                out.limit = static_cast<std::int32_t>(number);
            } else {
                if (auto problem = age_problem(key, number)) return *problem;
                out.filter.older_than_s = number;
            }
            continue;
        }
        if (!value.is_string()) return "'" + key + "' must be a string";
        const auto text = value.get<std::string>();
        if (auto problem = text_problem(key, text)) return *problem;
        (key == "error_contains" ? out.filter.error_contains
         : key == "namespace"    ? out.filter.namespace_name
                                 : out.filter.activity_type) = text;
    }
    return out;
}

}  // namespace outboxd::http
