#include "outboxd/store/access_store.hpp"

#include "access_sql.hpp"
#include "pg_codec.hpp"
#include "pg_session.hpp"
#include "row_codec.hpp"

namespace outboxd::store {

using namespace codec;

namespace {

CredentialRecord decode_credential(const pqxx::row& r) {
    CredentialRecord c;
    c.id = r[0].as<std::string>();
    c.name = r[1].as<std::string>();
    c.secret_sha256 = r[2].as<std::string>();
    c.namespaces = pg::parse_text_array(r[3]);
    c.roles = pg::parse_text_array(r[4]);
    if (!r[5].is_null()) c.nodes = pg::parse_text_array(r[5]);
    c.expires_at = pg::optional_instant(r[6]);
    c.created_at = pg::from_micros(r[7].as<std::int64_t>());
    c.created_by = r[8].as<std::string>();
    return c;
}

}  // namespace

TimePoint AccessStore::create_credential(const CredentialRecord& c) {
    std::optional<std::string> nodes;
    if (c.nodes) nodes = pg::text_array(*c.nodes);
    std::optional<std::int64_t> expires;
    if (c.expires_at) expires = pg::to_micros(*c.expires_at);
    return session_.pg().transact(sql::kCreateCredential, [&](pqxx::work& tx) {
        const auto result = tx.exec_prepared(
            std::string{sql::kCreateCredential.name}, text_param(c.id), text_param(c.name),
            text_param(c.secret_sha256), pg::text_array(c.namespaces), pg::text_array(c.roles),
            nodes, expires, text_param(c.created_by));
        return pg::from_micros(result[0][0].as<std::int64_t>());
    });
}

AccessStore::Credentials AccessStore::list_credentials(std::optional<std::int64_t> known_version) {
    // The version first: a change between the two reads shows in the rows now and in the
    // version next time (the rows are read again then); none is ever missed.
    return session_.pg().transact(sql::kListCredentials, [&](pqxx::work& tx) {
        Credentials out;
        const auto version = tx.exec_prepared1(std::string{sql::kCredentialsVersion.name});
        out.version = version[0].as<std::int64_t>();
        out.now = pg::from_micros(version[1].as<std::int64_t>());
        if (known_version && *known_version == out.version) {
            out.changed = false;
            return out;
        }
        for (const auto& r : tx.exec_prepared(std::string{sql::kListCredentials.name})) {
            out.credentials.push_back(decode_credential(r));
        }
        return out;
    });
}

std::optional<CredentialRecord> AccessStore::get_credential(std::string_view id) {
    return session_.pg().transact(
        sql::kGetCredential, [&](pqxx::work& tx) -> std::optional<CredentialRecord> {
            const auto result =
                tx.exec_prepared(std::string{sql::kGetCredential.name}, text_param(id));
            if (result.empty()) return std::nullopt;
            return decode_credential(result[0]);
        });
}

bool AccessStore::delete_credential(std::string_view id) {
    return session_.pg().transact(sql::kDeleteCredential, [&](pqxx::work& tx) {
        return !tx.exec_prepared(std::string{sql::kDeleteCredential.name}, text_param(id)).empty();
    });
}

void AccessStore::record(const AuditEntry& e) {
    session_.pg().transact(sql::kRecordAudit, [&](pqxx::work& tx) {
        tx.exec_prepared(std::string{sql::kRecordAudit.name}, text_param(e.credential_id),
                         text_param(e.method), text_param(e.route), e.namespace_name,
                         text_param(e.change_json), e.database);
    });
}

std::vector<AuditEntry> AccessStore::audit(std::int32_t limit, std::optional<std::int64_t> before) {
    return session_.pg().transact(sql::kListAudit, [&](pqxx::work& tx) {
        std::vector<AuditEntry> out;
        for (const auto& r : tx.exec_prepared(std::string{sql::kListAudit.name}, before, limit)) {
            AuditEntry e;
            e.id = r[0].as<std::int64_t>();
            e.at = pg::from_micros(r[1].as<std::int64_t>());
            e.credential_id = r[2].as<std::string>();
            e.method = r[3].as<std::string>();
            e.route = r[4].as<std::string>();
            e.namespace_name = pg::optional_text(r[5]);
            e.change_json = r[6].as<std::string>();
            e.database = pg::optional_text(r[7]);
            out.push_back(std::move(e));
        }
        return out;
    });
}

}  // namespace outboxd::store
