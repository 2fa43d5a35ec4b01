#include "outboxd/store/target_store.hpp"

#include "outboxd/store/store_error.hpp"
#include "pg_codec.hpp"
#include "pg_session.hpp"
#include "row_codec.hpp"
#include "target_sql.hpp"

namespace outboxd::store {

using namespace codec;

namespace {

HttpTargetRecord decode_target(const pqxx::row& r) {
    HttpTargetRecord record;
    auto& t = record.settings;
    t.name = r[0].as<std::string>();
    t.namespace_name = r[1].as<std::string>();
    t.task_queue = r[2].as<std::string>();
    t.activity_types = pg::parse_text_array(r[3]);
    t.url = r[4].as<std::string>();
    t.max_in_flight = r[5].as<std::int32_t>();
    t.timeout_ms = r[6].as<std::int32_t>();
    t.signing_secret = pg::optional_text(r[7]);
    const auto names = pg::parse_text_array(r[8]);
    const auto values = pg::parse_text_array(r[9]);
    if (names.size() != values.size()) {
        throw DecodeError("http target '" + t.name + "': header names and values differ in number");
    }
    for (std::size_t i = 0; i < names.size(); ++i) t.headers.emplace_back(names[i], values[i]);
    t.ca_file = pg::optional_text(r[10]);
    record.created_at = pg::from_micros(r[11].as<std::int64_t>());
    record.updated_at = pg::from_micros(r[12].as<std::int64_t>());
    record.last_error = pg::optional_text(r[13]);
    record.last_error_at = pg::optional_instant(r[14]);
    record.last_success_at = pg::optional_instant(r[15]);
    return record;
}

}  // namespace

void TargetStore::put(const HttpTargetSettings& target) {
    std::vector<std::string> names, values;
    for (const auto& [name, value] : target.headers) {
        names.push_back(name);
        values.push_back(value);
    }
    session_.pg().transact(sql::kPutHttpTarget, [&](pqxx::work& tx) {
        tx.exec_prepared(std::string{sql::kPutHttpTarget.name}, text_param(target.name),
                         text_param(target.namespace_name), text_param(target.task_queue),
                         pg::text_array(target.activity_types), text_param(target.url),
                         target.max_in_flight, target.timeout_ms, target.signing_secret,
                         pg::text_array(names), pg::text_array(values), target.ca_file);
    });
}

std::optional<HttpTargetRecord> TargetStore::get(std::string_view name) {
    return session_.pg().transact(
        sql::kGetHttpTarget, [&](pqxx::work& tx) -> std::optional<HttpTargetRecord> {
            const auto result =
                tx.exec_prepared(std::string{sql::kGetHttpTarget.name}, text_param(name));
            if (result.empty()) return std::nullopt;
            return decode_target(result[0]);
        });
}

std::vector<HttpTargetRecord> TargetStore::list() {
    return session_.pg().transact(sql::kListHttpTargets, [&](pqxx::work& tx) {
        std::vector<HttpTargetRecord> out;
        for (const auto& r : tx.exec_prepared(std::string{sql::kListHttpTargets.name})) {
            out.push_back(decode_target(r));
        }
        return out;
    });
}

bool TargetStore::remove(std::string_view name) {
    return session_.pg().transact(sql::kDeleteHttpTarget, [&](pqxx::work& tx) {
        return !tx.exec_prepared(std::string{sql::kDeleteHttpTarget.name}, text_param(name))
                    .empty();
    });
}

void TargetStore::report(std::span<const HttpTargetReport> reports) {
    if (reports.empty()) return;
    pg::ArrayLiteral names, errors, succeeded;
    for (const auto& report : reports) {
        names.add(std::string_view{report.name});
        errors.add(report.error);
        succeeded.add(std::string_view{report.succeeded ? "true" : "false"});
    }
    session_.pg().transact(sql::kReportHttpTargets, [&](pqxx::work& tx) {
        tx.exec_prepared(std::string{sql::kReportHttpTargets.name}, names.str(), errors.str(),
                         succeeded.str());
    });
}

}  // namespace outboxd::store
