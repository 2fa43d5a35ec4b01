#include "row_codec.hpp"

#include <algorithm>
#include <tuple>

#include "outboxd/store/store_error.hpp"
#include "pg_codec.hpp"

namespace outboxd::store::codec {

void decode_task_fields(const pqxx::row& r, OutboxRow& row) {
    row.id = r[0].as<std::int64_t>();
    row.dispatch_key = r[1].as<std::string>();
    row.workflow_id = r[2].as<std::string>();
    row.ordinal = r[3].as<std::int64_t>();
    row.run_id = pg::optional_text(r[4]);
    row.namespace_name = r[5].as<std::string>();
    row.task_queue = r[6].as<std::string>();
    row.node = pg::optional_text(r[7]);
    row.activity_type = r[8].as<std::string>();
    row.input_json = r[9].as<std::string>();
}

OutboxRow decode_row(const pqxx::row& r) {
    OutboxRow row;
    decode_task_fields(r, row);
    row.status = parse_status(r[10].c_str());
    row.attempt = r[11].as<std::int32_t>();
    row.visible_after = pg::from_micros(r[12].as<std::int64_t>());
    row.claimed_at = pg::optional_instant(r[13]);
    row.claimed_by = pg::optional_text(r[14]);
    row.claim_token = r[15].is_null() ? 0 : r[15].as<std::int64_t>();
    row.last_error = pg::optional_text(r[16]);
    row.created_at = pg::from_micros(r[17].as<std::int64_t>());
    row.finished_at = pg::optional_instant(r[18]);
    row.shard = r[19].as<std::int32_t>();
    row.priority = r[20].as<std::int32_t>();
    row.waiting = r[21].as<bool>();
    row.result_json = pg::optional_text(r[22]);
    row.traceparent = pg::optional_text(r[23]);
    row.heartbeat_at = pg::optional_instant(r[24]);
    row.progress_json = pg::optional_text(r[25]);
    return row;
}

OutboxRow decode_claimed_row(const pqxx::row& r, const std::string& claimer) {
    OutboxRow row;
    decode_task_fields(r, row);
    row.status = Status::claimed;
    row.attempt = r[10].as<std::int32_t>();
    row.visible_after = pg::from_micros(r[11].as<std::int64_t>());
    row.claim_token = r[12].as<std::int64_t>();
    row.shard = r[13].as<std::int32_t>();
    row.claimed_at = pg::from_micros(r[14].as<std::int64_t>());
    row.priority = r[15].as<std::int32_t>();
    row.traceparent = pg::optional_text(r[16]);
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
