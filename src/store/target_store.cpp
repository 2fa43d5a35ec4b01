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
constexpr std::string_view kHeaderField = "header:";          // + the header's name
constexpr std::string_view kCredentialField = "credential:";  // + the credential's name

std::string header_field(std::string_view header) {
    return std::string{kHeaderField} + std::string{header};
}

std::string credential_field(std::string_view credential) {
    return std::string{kCredentialField} + std::string{credential};
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
    if (field.starts_with(kCredentialField)) {
        return "credential '" + std::string{field.substr(kCredentialField.size())} + "'";
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

TargetRecord decode_target(const pqxx::row& r, const util::SecretBox* box) {
    TargetRecord record;
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
    t.kind = r[16].as<std::string>();
    const auto option_names = pg::parse_text_array(r[17]);
    const auto option_values = pg::parse_text_array(r[18]);
    const auto credential_names = pg::parse_text_array(r[19]);
    const auto credential_values = pg::parse_text_array(r[20]);
    if (option_names.size() != option_values.size() ||
        credential_names.size() != credential_values.size()) {
        throw DecodeError("target '" + t.name +
                          "': option or credential names and values differ in number");
    }
    for (std::size_t i = 0; i < option_names.size(); ++i) {
        t.options.emplace(option_names[i], option_values[i]);
    }
    for (std::size_t i = 0; i < credential_names.size(); ++i) {
        t.credentials.emplace(credential_names[i],
                              read_secret(box, t.name, credential_field(credential_names[i]),
                                          credential_values[i], record.secrets));
    }
    return record;
}

// A map's names and values, as the statements take them.
struct NamesAndValues {
    std::vector<std::string> names, values;
};

NamesAndValues split(const std::map<std::string, std::string>& items) {
    NamesAndValues out;
    for (const auto& [name, value] : items) {
        out.names.push_back(name);
        out.values.push_back(value);
    }
    return out;
}

}  // namespace

void TargetStore::put(const TargetSettings& target, SecretUpdate signing_secret,
                      const KeptCredentials& kept) {
    const auto* box = secrets_.get();
    std::vector<std::string> names, values;
    for (const auto& [name, value] : target.headers) {
        names.push_back(name);
        values.push_back(write_secret(box, target.name, header_field(name), value));
    }
    std::map<std::string, std::string> credentials;
    for (const auto& [name, value] : target.credentials) {
        credentials[name] = write_secret(box, target.name, credential_field(name), value);
    }
    const auto options = split(target.options);
    session_.pg().transact(sql::kPutHttpTarget, [&](pqxx::work& tx) {
        std::optional<std::string> secret;
        if (signing_secret == SecretUpdate::keep || !kept.empty()) {
            // Locked, so that a concurrent PUT that sets a secret is not undone by this one.
            const auto stored = tx.exec_prepared(std::string{sql::kLockHttpTargetSecret.name},
                                                 text_param(target.name));
            if (!stored.empty()) {
                const auto text = pg::optional_text(stored[0][0]);
                if (signing_secret == SecretUpdate::keep && text) {
                    secret = rewrite_secret(box, target.name, kSigningSecretField, *text);
                }
                const auto stored_names = pg::parse_text_array(stored[0][1]);
                const auto stored_values = pg::parse_text_array(stored[0][2]);
                for (std::size_t i = 0; i < stored_names.size() && i < stored_values.size(); ++i) {
                    const auto& name = stored_names[i];
                    if (std::find(kept.begin(), kept.end(), name) == kept.end()) continue;
                    credentials[name] =
                        rewrite_secret(box, target.name, credential_field(name), stored_values[i]);
                }
            }
        }
        if (signing_secret == SecretUpdate::replace && target.signing_secret) {
            secret = write_secret(box, target.name, kSigningSecretField, *target.signing_secret);
        }
        const auto sealed = split(credentials);
        tx.exec_prepared(std::string{sql::kPutHttpTarget.name}, text_param(target.name),
                         text_param(target.namespace_name), text_param(target.task_queue),
                         pg::text_array(target.activity_types), text_param(target.url),
                         target.max_in_flight, target.timeout_ms, secret, pg::text_array(names),
                         pg::text_array(values), target.ca_file, text_param(target.kind),
                         pg::text_array(options.names), pg::text_array(options.values),
                         pg::text_array(sealed.names), pg::text_array(sealed.values));
    });
}

std::optional<TargetRecord> TargetStore::get(std::string_view name) {
    return session_.pg().transact(
        sql::kGetHttpTarget, [&](pqxx::work& tx) -> std::optional<TargetRecord> {
            const auto result =
                tx.exec_prepared(std::string{sql::kGetHttpTarget.name}, text_param(name));
            if (result.empty()) return std::nullopt;
            return decode_target(result[0], secrets_.get());
        });
}

std::vector<TargetRecord> TargetStore::list() {
    return session_.pg().autocommit(sql::kListHttpTargets, [&](pqxx::nontransaction& tx) {
        std::vector<TargetRecord> out;
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

void TargetStore::report(std::span<const TargetReport> reports) {
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
            const auto credential_names = pg::parse_text_array(r[4]);
            auto credentials = pg::parse_text_array(r[5]);
            if (names.size() != values.size() || credential_names.size() != credentials.size()) {
                report.unreadable.emplace_back(
                    name, "header or credential names and values differ in number");
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
            for (std::size_t i = 0; i < credential_names.size(); ++i) {
                count(credentials[i]);
                credentials[i] = read_secret(&box, name, credential_field(credential_names[i]),
                                             std::move(credentials[i]), at_rest);
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
            for (std::size_t i = 0; i < credential_names.size(); ++i) {
                credentials[i] =
                    write_secret(&box, name, credential_field(credential_names[i]), credentials[i]);
            }
            tx.exec_prepared(std::string{sql::kResealHttpTarget.name}, text_param(name), secret,
                             pg::text_array(names), pg::text_array(values),
                             pg::text_array(credential_names), pg::text_array(credentials));
            ++report.targets;
            report.values += stale;
        }
        return report;
    });
}

}  // namespace outboxd::store
