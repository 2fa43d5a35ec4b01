#pragma once

// Encoding of values into PostgreSQL text parameters (array literals, durations) and
// decoding of result fields. Internal to src/store.

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <pqxx/pqxx>

#include "outboxd/store/outbox_row.hpp"

namespace outboxd::store::pg {

// Builds a one-dimensional array literal ("{...}") element by element.
class ArrayLiteral {
public:
    ArrayLiteral& add(std::string_view text);  // quoted and escaped
    ArrayLiteral& add(const std::string& text) { return add(std::string_view{text}); }
    ArrayLiteral& add(std::int64_t value);
    ArrayLiteral& add_null();
    ArrayLiteral& add(const std::optional<std::string>& text) {
        return text ? add(std::string_view{*text}) : add_null();
    }
    [[nodiscard]] std::string str() const { return text_ + "}"; }
    [[nodiscard]] bool empty() const { return text_.size() == 1; }

private:
    void separate();
    std::string text_ = "{";
};

template <typename Range>
std::string text_array(const Range& values) {
    ArrayLiteral literal;
    for (const auto& value : values) literal.add(std::string_view{value});
    return literal.str();
}

// Microseconds since the Unix epoch, the unit instants travel in between SQL and C++.
[[nodiscard]] inline std::int64_t to_micros(TimePoint instant) {
    return std::chrono::duration_cast<std::chrono::microseconds>(instant.time_since_epoch())
        .count();
}
[[nodiscard]] inline TimePoint from_micros(std::int64_t micros) {
    return TimePoint{
        std::chrono::duration_cast<TimePoint::duration>(std::chrono::microseconds{micros})};
}

[[nodiscard]] std::optional<std::string> optional_text(const pqxx::field& field);
// Elements of a text[] in its text form ("{a,\"b c\"}"); NULL elements are skipped.
[[nodiscard]] std::vector<std::string> parse_text_array(const pqxx::field& field);
[[nodiscard]] std::optional<TimePoint> optional_instant(const pqxx::field& field);

}  // namespace outboxd::store::pg

// SQL expression turning a timestamptz column into epoch microseconds.
#define OUTBOXD_SQL_MICROS(column) "(extract(epoch FROM " column ") * 1000000)::bigint"
// And back, exactly: seconds and microseconds apart, since `µs * interval '1 microsecond'`
// goes through a double and loses microseconds more than ~285 years from 1970.
#define OUTBOXD_SQL_INSTANT(micros)     \
    "('epoch'::timestamptz + (" micros  \
    " / 1000000) * interval '1 second'" \
    " + (" micros " % 1000000) * interval '1 microsecond')"

// Whether the lease of incarnation $1 holds, by the database clock: its shards are its own
// while it does. Uncorrelated, so evaluated once per statement (a one-time filter).
#define OUTBOXD_OWN_LEASE                                        \
    "(SELECT n.lease_expires_at > now() FROM dispatcher_nodes n" \
    " WHERE n.incarnation = $1)"

// Shards in range $2 owned by incarnation $1 while its lease holds, evaluated inside the
// statement that uses it.
// As a multirange: a row's shard is checked by binary search over a few ranges.
#define OUTBOXD_LEASED_SHARDS                                                       \
    "leased AS MATERIALIZED ("                                                      \
    "  SELECT coalesce(range_agg(int4range(l.shard, l.shard + 1)), '{}') AS shards" \
    "  FROM shard_leases l"                                                         \
    "  WHERE l.owner = $1 AND l.shard <@ $2::int4multirange AND " OUTBOXD_OWN_LEASE ")"
