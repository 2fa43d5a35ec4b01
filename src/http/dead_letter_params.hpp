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

// Where a page of dead letters ended, in a listing of one database or of several (README,
// "HTTP API"): a listing over several is ordered by failed_at (newest first), then by
// database name, then by id (newest first), so its cursor names the database too.
struct PageCursor {
    store::DeadLetterCursor at;
    std::optional<std::string> database;  // none: a listing of one database
};

struct DeadLetterQuery {
    store::DeadLetterFilter filter;
    std::int32_t limit = 100;
    std::optional<PageCursor> after;
};

struct DeadLetterBulk {
    store::DeadLetterFilter filter;
    std::int32_t limit = 1000;
};

// A listing over several databases is ordered by failed_at (newest first; none first, as
// PostgreSQL puts NULL first in a descending order), then by database name, then by id
// (newest first): one order over all of them, of which each database's own (failed_at, id)
// order is a part. A page holds the first `limit` letters after the cursor in that order;
// each database gives its first `limit` after it, so the page is among them.

// Whether letter `a` of database `da` comes before letter `b` of database `db`.
[[nodiscard]] bool listed_before(const std::string& da, const store::DeadLetter& a,
                                 const std::string& db, const store::DeadLetter& b);
// The letters of `database` after `after`, as a cursor of its own (failed_at, id) order.
[[nodiscard]] store::DeadLetterCursor cursor_within(const std::string& database,
                                                    const PageCursor& after);

// GET /v1/dead-letters?namespace=&activity_type=&error=&older_than_s=&limit=&after= (and
// database=, which the router takes: database_param.hpp)
[[nodiscard]] std::variant<DeadLetterQuery, std::string> parse_dead_letter_query(
    const std::map<std::string, std::string>& query, std::int32_t max_limit);

// POST /v1/dead-letters/requeue and /purge:
// {"namespace","activity_type","error_contains","older_than_s","limit"}, all optional.
[[nodiscard]] std::variant<DeadLetterBulk, std::string> parse_dead_letter_bulk(
    const std::string& body);

// A page's cursor as the list shows it ("<failed_at µs>.<id>"), and back.
[[nodiscard]] std::string encode_cursor(const store::DeadLetterCursor& cursor);
[[nodiscard]] std::optional<store::DeadLetterCursor> decode_cursor(const std::string& text);
// The same with the database of a listing over several: "<failed_at µs>.<id>.<database>".
[[nodiscard]] std::string encode_page_cursor(const PageCursor& cursor);
[[nodiscard]] std::optional<PageCursor> decode_page_cursor(const std::string& text);

}  // namespace outboxd::http
