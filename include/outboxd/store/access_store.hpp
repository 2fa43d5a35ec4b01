#pragma once

// Managed credentials and the audit log in PostgreSQL (tables credentials and audit_log,
// README "Security"), in the control database. See OutboxSession for threads, errors and
// time. A credential's secret never reaches this store: only its SHA-256, in hex.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "outboxd/store/outbox_row.hpp"
#include "outboxd/store/outbox_session.hpp"

namespace outboxd::store {

struct CredentialRecord {
    std::string id;
    std::string name;
    std::string secret_sha256;            // lower-case hex
    std::vector<std::string> namespaces;  // {"*"}: every namespace
    std::vector<std::string> roles;
    std::optional<std::vector<std::string>> nodes;  // none: any node
    std::optional<TimePoint> expires_at;
    TimePoint created_at{};
    std::string created_by;  // the id of the credential that created it
};

struct AuditEntry {
    std::int64_t id = 0;
    TimePoint at{};
    std::string credential_id;
    std::string method;
    std::string route;
    std::optional<std::string> namespace_name;
    // The outbox database the change was made in (none: recorded before databases were).
    std::optional<std::string> database;
    std::string change_json = "{}";
};

class AccessStore {
public:
    explicit AccessStore(OutboxSession& session) : session_(session) {}

    // Stores a new credential (its id and hash chosen by the caller); returns its creation
    // time. The table's CHECKs refuse a name, namespace list or role out of shape with a
    // ValidationError.
    TimePoint create_credential(const CredentialRecord& credential);
    // Every credential, and the database's clock when they were read; or, when the table's
    // version is still `known_version`, none of them (`changed` false): one row read.
    struct Credentials {
        std::vector<CredentialRecord> credentials;
        TimePoint now{};
        std::int64_t version = -1;
        bool changed = true;
    };
    Credentials list_credentials(std::optional<std::int64_t> known_version = std::nullopt);
    std::optional<CredentialRecord> get_credential(std::string_view id);
    // False when there was no such credential.
    bool delete_credential(std::string_view id);

    void record(const AuditEntry& entry);
    // Newest first: at most `limit` entries with ids below `before` (none: from the newest).
    std::vector<AuditEntry> audit(std::int32_t limit, std::optional<std::int64_t> before);

private:
    OutboxSession& session_;
};

}  // namespace outboxd::store
