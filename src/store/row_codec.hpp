#pragma once

// Decoding of outbox rows as the store's statements return them, and the checks of what
// goes into a statement. Internal to src/store (and test support).

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <pqxx/pqxx>

#include "outboxd/store/outbox_row.hpp"

namespace outboxd::store::codec {

[[nodiscard]] inline std::int64_t millis(std::chrono::milliseconds duration) {
    return duration.count();
}

// The columns of a task, the same in OUTBOXD_ROW_COLUMNS and OUTBOXD_CLAIMED_COLUMNS
// (row_columns.hpp).
void decode_task_fields(const pqxx::row& r, OutboxRow& row);
// A full row (OUTBOXD_ROW_COLUMNS).
[[nodiscard]] OutboxRow decode_row(const pqxx::row& r);
// One row of a claim (OUTBOXD_CLAIMED_COLUMNS) by `claimer`.
[[nodiscard]] OutboxRow decode_claimed_row(const pqxx::row& r, const std::string& claimer);
void sort_claim_order(std::vector<OutboxRow>& rows);
// Rows of a claim in claim order: UPDATE … RETURNING gives them in no particular order.
[[nodiscard]] std::vector<OutboxRow> decode_claimed(const pqxx::result& result,
                                                    const std::string& claimer);
// Full rows in claim order.
[[nodiscard]] std::vector<OutboxRow> decode_rows_in_claim_order(const pqxx::result& result);
[[nodiscard]] std::vector<std::string> decode_texts(const pqxx::result& result);
// (dispatch_key, namespace) rows of a cancel.
[[nodiscard]] CancelledRows decode_cancelled(const pqxx::result& result);

// A text parameter as libpq will send it: as a C string, which a NUL would cut short (and
// the statement would then look up another value), so refused before it reaches SQL.
[[nodiscard]] std::string text_param(std::string_view value);
void check_limit(std::int32_t limit);

}  // namespace outboxd::store::codec
