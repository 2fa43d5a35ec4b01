#include "row_codec.hpp"

#include <algorithm>
#include <tuple>

#include "outboxd/store/store_error.hpp"
#include "pg_codec.hpp"
#include "row_columns.hpp"

namespace outboxd::store::codec {

void decode_task_fields(const pqxx::row& r, OutboxRow& row) {
    namespace col = row_column;  // the same positions in claimed_column (row_columns.hpp)
    row.id = r[col::id].as<std::int64_t>();
    row.dispatch_key = r[col::dispatch_key].as<std::string>();
    row.workflow_id = r[col::workflow_id].as<std::string>();
    row.ordinal = r[col::ordinal].as<std::int64_t>();
    row.run_id = pg::optional_text(r[col::run_id]);
    row.namespace_name = r[col::namespace_name].as<std::string>();
    row.task_queue = r[col::task_queue].as<std::string>();
    row.node = pg::optional_text(r[col::node]);
    row.activity_type = r[col::activity_type].as<std::string>();
    row.input_json = r[col::input].as<std::string>();
}

OutboxRow decode_row(const pqxx::row& r) {
    namespace col = row_column;
    OutboxRow row;
    decode_task_fields(r, row);
    row.status = parse_status(r[col::status].c_str());
    row.attempt = r[col::attempt].as<std::int32_t>();
    row.visible_after = pg::from_micros(r[col::visible_after_us].as<std::int64_t>());
    row.claimed_at = pg::optional_instant(r[col::claimed_at_us]);
    row.claimed_by = pg::optional_text(r[col::claimed_by]);
    row.claim_token = r[col::claim_token].is_null() ? 0 : r[col::claim_token].as<std::int64_t>();
    row.last_error = pg::optional_text(r[col::last_error]);
    row.created_at = pg::from_micros(r[col::created_at_us].as<std::int64_t>());
    row.finished_at = pg::optional_instant(r[col::finished_at_us]);
    row.shard = r[col::shard].as<std::int32_t>();
    row.priority = r[col::priority].as<std::int32_t>();
    row.waiting = r[col::waiting].as<bool>();
    row.result_json = pg::optional_text(r[col::result]);
    row.traceparent = pg::optional_text(r[col::traceparent]);
    row.heartbeat_at = pg::optional_instant(r[col::heartbeat_at_us]);
    row.progress_json = pg::optional_text(r[col::progress]);
    row.deliveries = r[col::deliveries].as<std::int32_t>();
    return row;
}

OutboxRow decode_claimed_row(const pqxx::row& r, const std::string& claimer) {
    namespace col = claimed_column;
    OutboxRow row;
    decode_task_fields(r, row);
    row.status = Status::claimed;
    row.attempt = r[col::attempt].as<std::int32_t>();
    row.visible_after = pg::from_micros(r[col::visible_after_us].as<std::int64_t>());
    row.claim_token = r[col::claim_token].as<std::int64_t>();
    row.shard = r[col::shard].as<std::int32_t>();
    row.claimed_at = pg::from_micros(r[col::claimed_at_us].as<std::int64_t>());
    row.priority = r[col::priority].as<std::int32_t>();
    row.traceparent = pg::optional_text(r[col::traceparent]);
    row.deliveries = r[col::deliveries].as<std::int32_t>();
    row.claimed_by = claimer;
    return row;
}

void sort_claim_order(std::vector<OutboxRow>& rows) {
    // Higher priority first, as claims take them.
    std::sort(rows.begin(), rows.end(), [](const OutboxRow& a, const OutboxRow& b) {
        return std::tie(b.priority, a.visible_after, a.id) <
               std::tie(a.priority, b.visible_after, b.id);
    });
}

std::vector<OutboxRow> decode_claimed(const pqxx::result& result, const std::string& claimer) {
    std::vector<OutboxRow> rows;
    rows.reserve(result.size());
    for (const auto& r : result) rows.push_back(decode_claimed_row(r, claimer));
    sort_claim_order(rows);
    return rows;
}

std::vector<OutboxRow> decode_rows_in_claim_order(const pqxx::result& result) {
    std::vector<OutboxRow> rows;
    rows.reserve(result.size());
    for (const auto& r : result) rows.push_back(decode_row(r));
    sort_claim_order(rows);
    return rows;
}

std::vector<std::string> decode_texts(const pqxx::result& result) {
    std::vector<std::string> texts;
    texts.reserve(result.size());
    for (const auto& r : result) texts.push_back(r[0].as<std::string>());
    return texts;
}

CancelledRows decode_cancelled(const pqxx::result& result) {
    CancelledRows cancelled;
    for (const auto& r : result) {
        cancelled.keys.push_back(r[0].as<std::string>());
        ++cancelled.by_namespace[r[1].as<std::string>()];
    }
    std::sort(cancelled.keys.begin(), cancelled.keys.end());
    return cancelled;
}

std::string text_param(std::string_view value) {
    if (value.find('\0') != std::string_view::npos) {
        throw ValidationError("text parameter contains a NUL byte");
    }
    return std::string{value};
}

void check_limit(std::int32_t limit) {
    if (limit < 0) throw ValidationError("limit must be >= 0, got " + std::to_string(limit));
}

}  // namespace outboxd::store::codec
