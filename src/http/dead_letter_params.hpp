#pragma once

// The filters, limits and cursors of the dead-letter routes (README, "HTTP API"), from a
// query string or a JSON body. Never throws: what is wrong comes back as a message naming
// the parameter.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <variant>

#include "outboxd/store/admin_store.hpp"

namespace outboxd::http {

struct DeadLetterQuery {
    store::DeadLetterFilter filter;
    std::int32_t limit = 100;
    std::optional<store::DeadLetterCursor> after;
};

struct DeadLetterBulk {
    store::DeadLetterFilter filter;
    std::int32_t limit = 1000;
};

// GET /v1/dead-letters?namespace=&activity_type=&error=&older_than_s=&limit=&after=
[[nodiscard]] std::variant<DeadLetterQuery, std::string> parse_dead_letter_query(
    const std::map<std::string, std::string>& query, std::int32_t max_limit);

// POST /v1/dead-letters/requeue and /purge:
// {"namespace","activity_type","error_contains","older_than_s","limit"}, all optional.
[[nodiscard]] std::variant<DeadLetterBulk, std::string> parse_dead_letter_bulk(
    const std::string& body);

// A page's cursor as the list shows it ("<failed_at µs>.<id>"), and back.
[[nodiscard]] std::string encode_cursor(const store::DeadLetterCursor& cursor);
[[nodiscard]] std::optional<store::DeadLetterCursor> decode_cursor(const std::string& text);

}  // namespace outboxd::http
