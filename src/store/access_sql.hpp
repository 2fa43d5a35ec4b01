#pragma once

// The statements of managed credentials and the audit log (AccessStore). Internal to
// src/store.

#include <array>

#include "pg_codec.hpp"
#include "pg_session.hpp"

namespace outboxd::store::sql {

// clang-format off

inline constexpr Statement kCreateCredential{"credential_create", R"SQL(
INSERT INTO credentials (id, name, secret_sha256, namespaces, roles, nodes, expires_at,
                         created_by)
VALUES ($1, $2, $3, $4::text[], $5::text[], $6::text[],
        to_timestamp($7::bigint / 1000000.0), $8)
RETURNING )SQL" OUTBOXD_SQL_MICROS("created_at")};

#define OUTBOXD_CREDENTIAL_COLUMNS                                                        \
    "id, name, secret_sha256, namespaces::text, roles::text, nodes::text, "              \
    OUTBOXD_SQL_MICROS("expires_at") ", " OUTBOXD_SQL_MICROS("created_at") ", created_by"

inline constexpr Statement kListCredentials{"credential_list",
    "SELECT " OUTBOXD_CREDENTIAL_COLUMNS " FROM credentials ORDER BY created_at, id"};

inline constexpr Statement kGetCredential{"credential_get",
    "SELECT " OUTBOXD_CREDENTIAL_COLUMNS " FROM credentials WHERE id = $1"};

inline constexpr Statement kDeleteCredential{"credential_delete",
    "DELETE FROM credentials WHERE id = $1 RETURNING id"};

inline constexpr Statement kRecordAudit{"audit_record", R"SQL(
INSERT INTO audit_log (credential_id, method, route, namespace, change, database)
VALUES ($1, $2, $3, $4, $5::jsonb, $6))SQL"};

inline constexpr Statement kListAudit{"audit_list",
    "SELECT id, " OUTBOXD_SQL_MICROS("at") ", credential_id, method, route, namespace,"
    " change::text, database FROM audit_log WHERE $1::bigint IS NULL OR id < $1"
    " ORDER BY id DESC LIMIT $2"};

// The table's version and the database's clock: whether a node's copy is still current.
inline constexpr Statement kCredentialsVersion{"credentials_version",
    "SELECT version, " OUTBOXD_SQL_MICROS("now()") " FROM credentials_version"};

// Every statement AccessStore runs.
inline constexpr std::array kAccessStatements{kCreateCredential, kListCredentials, kGetCredential,
                                              kDeleteCredential, kRecordAudit, kListAudit,
                                              kCredentialsVersion};

// clang-format on

}  // namespace outboxd::store::sql
