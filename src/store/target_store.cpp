#include "outboxd/store/target_store.hpp"

#include <algorithm>

#include "outboxd/store/store_error.hpp"
#include "pg_codec.hpp"
#include "pg_session.hpp"
#include "row_codec.hpp"
#include "target_sql.hpp"

namespace outboxd::store {

using namespace codec;

namespace {

constexpr std::string_view kSigningSecretField = "signing_secret";
constexpr std::string_view kHeaderField = "header:";  // + the header's name

std::string header_field(std::string_view header) {
    return std::string{kHeaderField} + std::string{header};
}

// What a target's secret is bound to when encrypted: the target and the field, so that a value
// moved to another target, or from one header to another, does not decrypt.
std::string secret_context(std::string_view target, std::string_view field) {
    return "http_target:" + std::string{target} + ":" + std::string{field};
}

std::string describe(std::string_view field) {
    if (field.starts_with(kHeaderField)) {
        return "the value of header '" + std::string{field.substr(kHeaderField.size())} + "'";
    }
    return std::string{field};
}

// A stored secret as the settings hold it: decrypted, or as stored when it is in clear or
// cannot be decrypted (then `at_rest` says why). Tallies how it is kept in `at_rest`.
std::string read_secret(const util::SecretBox* box, std::string_view target, std::string_view field,
                        std::string stored, SecretsAtRest& at_rest) {
    if (!util::SecretBox::is_sealed(stored)) {
        ++at_rest.clear;
        return stored;
    }
    ++at_rest.encrypted;
    const std::string key_id{util::SecretBox::key_id_of(stored)};
    auto& ids = at_rest.key_ids;
    if (const auto at = std::lower_bound(ids.begin(), ids.end(), key_id);
        !key_id.empty() && (at == ids.end() || *at != key_id)) {
        ids.insert(at, key_id);
    }
    if (at_rest.problem) return stored;  // the first problem is the one reported
    if (box == nullptr) {
        at_rest.problem = describe(field) + " is encrypted (key id '" + key_id +
                          "') but this node has no OUTBOXD_SECRETS_KEY";
        return stored;
    }
    auto opened = box->open(stored, secret_context(target, field));
    if (!opened.ok()) {
        at_rest.problem = describe(field) + " " + opened.problem + " (OUTBOXD_SECRETS_KEY)";
        return stored;
    }
    return std::move(opened.text);
}

// A secret as it is written: encrypted with keys, in clear without.
std::string write_secret(const util::SecretBox* box, std::string_view target,
                         std::string_view field, const std::string& plain) {
    return box ? box->seal(plain, secret_context(target, field)) : plain;
}

// A stored secret written again: encrypted under the first key when it can be read, as it is
// when it cannot (its key may yet come back).
std::string rewrite_secret(const util::SecretBox* box, std::string_view target,
                           std::string_view field, const std::string& stored) {
    SecretsAtRest at_rest;
    auto plain = read_secret(box, target, field, stored, at_rest);
    if (at_rest.problem) return stored;
    return write_secret(box, target, field, plain);
}

HttpTargetRecord decode_target(const pqxx::row& r, const util::SecretBox* box) {
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
    for (std::size_t i = 0; i < names.size(); ++i) {
        t.headers.emplace_back(
            names[i], read_secret(box, t.name, header_field(names[i]), values[i], record.secrets));
    }
    if (t.signing_secret) {
        t.signing_secret = read_secret(box, t.name, kSigningSecretField,
                                       std::move(*t.signing_secret), record.secrets);
    }
    t.ca_file = pg::optional_text(r[10]);
    record.created_at = pg::from_micros(r[11].as<std::int64_t>());
    record.updated_at = pg::from_micros(r[12].as<std::int64_t>());
    record.last_error = pg::optional_text(r[13]);
    record.last_error_at = pg::optional_instant(r[14]);
    record.last_success_at = pg::optional_instant(r[15]);
    return record;
}

}  // namespace

void TargetStore::put(const HttpTargetSettings& target, SecretUpdate signing_secret) {
    const auto* box = secrets_.get();
    std::vector<std::string> names, values;
    for (const auto& [name, value] : target.headers) {
        names.push_back(name);
        values.push_back(write_secret(box, target.name, header_field(name), value));
    }
    session_.pg().transact(sql::kPutHttpTarget, [&](pqxx::work& tx) {
        std::optional<std::string> secret;
        if (signing_secret == SecretUpdate::keep) {
            // Locked, so that a concurrent PUT that sets a secret is not undone by this one.
            const auto stored = tx.exec_prepared(std::string{sql::kLockHttpTargetSecret.name},
                                                 text_param(target.name));
            if (const auto text = stored.empty() ? std::nullopt : pg::optional_text(stored[0][0])) {
                secret = rewrite_secret(box, target.name, kSigningSecretField, *text);
            }
        } else if (target.signing_secret) {
            secret = write_secret(box, target.name, kSigningSecretField, *target.signing_secret);
        }
        tx.exec_prepared(std::string{sql::kPutHttpTarget.name}, text_param(target.name),
                         text_param(target.namespace_name), text_param(target.task_queue),
                         pg::text_array(target.activity_types), text_param(target.url),
                         target.max_in_flight, target.timeout_ms, secret, pg::text_array(names),
                         pg::text_array(values), target.ca_file);
    });
}

std::optional<HttpTargetRecord> TargetStore::get(std::string_view name) {
    return session_.pg().transact(
        sql::kGetHttpTarget, [&](pqxx::work& tx) -> std::optional<HttpTargetRecord> {
            const auto result =
                tx.exec_prepared(std::string{sql::kGetHttpTarget.name}, text_param(name));
            if (result.empty()) return std::nullopt;
            return decode_target(result[0], secrets_.get());
        });
}

std::vector<HttpTargetRecord> TargetStore::list() {
    return session_.pg().autocommit(sql::kListHttpTargets, [&](pqxx::nontransaction& tx) {
        std::vector<HttpTargetRecord> out;
        for (const auto& r : tx.exec_prepared(std::string{sql::kListHttpTargets.name})) {
            out.push_back(decode_target(r, secrets_.get()));
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

ResealReport TargetStore::reseal() {
    if (!secrets_) throw StoreError("no keys to encrypt target secrets with (OUTBOXD_SECRETS_KEY)");
    const auto& box = *secrets_;
    return session_.pg().transact(sql::kLockHttpTargetSecrets, [&](pqxx::work& tx) {
        ResealReport report;
        for (const auto& r : tx.exec_prepared(std::string{sql::kLockHttpTargetSecrets.name})) {
            const auto name = r[0].as<std::string>();
            auto secret = pg::optional_text(r[1]);
            const auto names = pg::parse_text_array(r[2]);
            auto values = pg::parse_text_array(r[3]);
            if (names.size() != values.size()) {
                report.unreadable.emplace_back(name, "header names and values differ in number");
                continue;
            }
            // Values in clear or under another key than the first are encrypted anew.
            std::int32_t stale = 0;
            const auto count = [&](const std::string& stored) {
                if (util::SecretBox::key_id_of(stored) != box.sealing_key_id()) ++stale;
            };
            SecretsAtRest at_rest;
            if (secret) {
                count(*secret);
                secret = read_secret(&box, name, kSigningSecretField, std::move(*secret), at_rest);
            }
            for (std::size_t i = 0; i < names.size(); ++i) {
                count(values[i]);
                values[i] =
                    read_secret(&box, name, header_field(names[i]), std::move(values[i]), at_rest);
            }
            if (at_rest.problem) {
                report.unreadable.emplace_back(name, *at_rest.problem);
                continue;
            }
            if (stale == 0) continue;
            if (secret) secret = write_secret(&box, name, kSigningSecretField, *secret);
            for (std::size_t i = 0; i < names.size(); ++i) {
                values[i] = write_secret(&box, name, header_field(names[i]), values[i]);
            }
            tx.exec_prepared(std::string{sql::kResealHttpTarget.name}, text_param(name), secret,
                             pg::text_array(names), pg::text_array(values));
            ++report.targets;
            report.values += stale;
        }
        return report;
    });
}

}  // namespace outboxd::store
