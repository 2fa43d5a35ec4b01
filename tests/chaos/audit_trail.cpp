#include "audit_trail.hpp"

#include <fstream>

#include <pqxx/pqxx>

namespace outboxd::chaos {

namespace {

// A claim ends when the row leaves 'claimed' or, which must never happen, is claimed again
// under another token without leaving it.
constexpr const char* kInstall = R"SQL(
    CREATE TABLE chaos_claim_end (
        seq         bigserial PRIMARY KEY,
        row_id      bigint      NOT NULL,
        dispatch_key text       NOT NULL,
        claim_token bigint      NOT NULL,
        new_status  text        NOT NULL,
        new_token   bigint,
        at          timestamptz NOT NULL);
    CREATE FUNCTION chaos_record_claim_end() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        INSERT INTO chaos_claim_end (row_id, dispatch_key, claim_token, new_status, new_token, at)
        VALUES (OLD.id, OLD.dispatch_key, OLD.claim_token, NEW.status, NEW.claim_token,
                clock_timestamp());
        RETURN NULL;
    END $$;
    CREATE TRIGGER chaos_record_claim_end AFTER UPDATE ON outbox FOR EACH ROW
        WHEN (OLD.status = 'claimed'
              AND (NEW.status <> 'claimed' OR NEW.claim_token IS DISTINCT FROM OLD.claim_token))
        EXECUTE FUNCTION chaos_record_claim_end();)SQL";

pqxx::result query(const std::string& url, const char* sql) {
    pqxx::connection connection{url};
    pqxx::read_transaction tx{connection};
    return tx.exec(sql);
}

}  // namespace

void AuditTrail::install() const {
    pqxx::connection connection{url_};
    pqxx::work tx{connection};
    tx.exec(kInstall);
    tx.commit();
}

std::vector<ClaimEnd> AuditTrail::done_claims() const {
    const auto rows =
        query(url_, "SELECT row_id, claim_token FROM chaos_claim_end WHERE new_status = 'done'");
    std::vector<ClaimEnd> out;
    out.reserve(rows.size());
    for (const auto& row : rows)
        out.push_back({row[0].as<std::int64_t>(), row[1].as<std::int64_t>()});
    return out;
}

std::int64_t AuditTrail::overlapping_claims() const {
    return query(url_, "SELECT count(*) FROM chaos_claim_end WHERE new_status = 'claimed'")[0][0]
        .as<std::int64_t>();
}

std::int64_t AuditTrail::rows_done_twice() const {
    return query(url_, R"SQL(
        SELECT count(*) FROM (
            SELECT row_id FROM chaos_claim_end WHERE new_status = 'done'
            GROUP BY row_id HAVING count(*) > 1) twice)SQL")[0][0]
        .as<std::int64_t>();
}

void AuditTrail::export_to(const std::string& path) const {
    std::ofstream out{path};
    out << "seq\trow_id\tdispatch_key\tclaim_token\tnew_status\tnew_token\tat_unix_ms\n";
    for (const auto& row : query(url_, R"SQL(
            SELECT seq, row_id, dispatch_key, claim_token, new_status, coalesce(new_token::text, ''),
                   (extract(epoch FROM at) * 1000)::bigint
            FROM chaos_claim_end ORDER BY seq)SQL")) {
        for (pqxx::row::size_type i = 0; i < row.size(); ++i) {
            out << (i ? "\t" : "") << row[i].c_str();
        }
        out << "\n";
    }
}

namespace {

// `sql` selects (bucket start, count) with $1 the bucket width in ms.
std::map<std::int64_t, std::int64_t> buckets(const std::string& url, const char* sql,
                                             std::int64_t bucket_ms) {
    pqxx::connection connection{url};
    pqxx::read_transaction tx{connection};
    std::map<std::int64_t, std::int64_t> out;
    for (const auto& row : tx.exec_params(sql, bucket_ms)) {
        out[row[0].as<std::int64_t>()] = row[1].as<std::int64_t>();
    }
    return out;
}

}  // namespace

std::map<std::int64_t, std::int64_t> AuditTrail::done_per_bucket(std::int64_t bucket_ms) const {
    return buckets(url_, R"SQL(
        SELECT floor(extract(epoch FROM at) * 1000 / $1)::bigint * $1, count(*)
        FROM chaos_claim_end WHERE new_status = 'done' GROUP BY 1)SQL",
                   bucket_ms);
}

std::map<std::int64_t, std::int64_t> AuditTrail::staged_per_bucket(std::int64_t bucket_ms) const {
    // created_at is the inserting transaction's start; the loader's transactions are short.
    return buckets(url_, R"SQL(
        SELECT floor(extract(epoch FROM created_at) * 1000 / $1)::bigint * $1, count(*)
        FROM outbox GROUP BY 1)SQL",
                   bucket_ms);
}

}  // namespace outboxd::chaos
