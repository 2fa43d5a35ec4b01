#pragma once

// The statements of targets (TargetStore): the API's changes and listings, and
// the nodes' refresh and reports. Internal to src/store.

#include <array>

#include "pg_codec.hpp"
#include "pg_session.hpp"

namespace outboxd::store::sql {

// clang-format off

// Targets of every kind. Headers, options and credentials each travel as two text arrays
// (names, values) and are kept as jsonb objects; they read back ordered by name. The signing
// secret, header values and credentials arrive encrypted when the node has keys
// (TargetStore): SQL sees only text.
inline constexpr Statement kPutHttpTarget{"target_put", R"SQL(
INSERT INTO targets (name, namespace, task_queue, activity_types, url, max_in_flight,
                     timeout_ms, signing_secret, headers, ca_file, kind, options, credentials)
VALUES ($1, $2, $3, $4::text[], $5, $6, $7, $8, jsonb_object($9::text[], $10::text[]), $11,
        $12, jsonb_object($13::text[], $14::text[]), jsonb_object($15::text[], $16::text[]))
ON CONFLICT (name) DO UPDATE
SET namespace = EXCLUDED.namespace, task_queue = EXCLUDED.task_queue,
    activity_types = EXCLUDED.activity_types, url = EXCLUDED.url,
    max_in_flight = EXCLUDED.max_in_flight, timeout_ms = EXCLUDED.timeout_ms,
    signing_secret = EXCLUDED.signing_secret, headers = EXCLUDED.headers,
    ca_file = EXCLUDED.ca_file, kind = EXCLUDED.kind, options = EXCLUDED.options,
    credentials = EXCLUDED.credentials, updated_at = now(),
    last_error = NULL, last_error_at = NULL)SQL"};

#define OUTBOXD_HTTP_TARGET_COLUMNS                                                      \
    "name, namespace, task_queue, activity_types::text, url, max_in_flight, timeout_ms," \
    " signing_secret,"                                                                   \
    " (SELECT coalesce(array_agg(key ORDER BY key), '{}')::text"                         \
    "  FROM jsonb_each_text(headers)),"                                                  \
    " (SELECT coalesce(array_agg(value ORDER BY key), '{}')::text"                       \
    "  FROM jsonb_each_text(headers)),"                                                  \
    " ca_file, " OUTBOXD_SQL_MICROS("created_at") ", " OUTBOXD_SQL_MICROS("updated_at")  \
    ", last_error, " OUTBOXD_SQL_MICROS("last_error_at") ", "                            \
    OUTBOXD_SQL_MICROS("last_success_at") ", kind,"                                      \
    " (SELECT coalesce(array_agg(key ORDER BY key), '{}')::text"                         \
    "  FROM jsonb_each_text(options)),"                                                  \
    " (SELECT coalesce(array_agg(value ORDER BY key), '{}')::text"                       \
    "  FROM jsonb_each_text(options)),"                                                  \
    " (SELECT coalesce(array_agg(key ORDER BY key), '{}')::text"                         \
    "  FROM jsonb_each_text(credentials)),"                                              \
    " (SELECT coalesce(array_agg(value ORDER BY key), '{}')::text"                       \
    "  FROM jsonb_each_text(credentials))"

inline constexpr Statement kGetHttpTarget{"target_get",
    "SELECT " OUTBOXD_HTTP_TARGET_COLUMNS " FROM targets WHERE name = $1"};

inline constexpr Statement kListHttpTargets{"target_list",
    "SELECT " OUTBOXD_HTTP_TARGET_COLUMNS " FROM targets ORDER BY name"};

// The stored secrets of a PUT that keeps some, locked until the PUT commits.
inline constexpr Statement kLockHttpTargetSecret{"target_lock_secret",
    "SELECT signing_secret,"
    " (SELECT coalesce(array_agg(key ORDER BY key), '{}')::text FROM jsonb_each_text(credentials)),"
    " (SELECT coalesce(array_agg(value ORDER BY key), '{}')::text FROM jsonb_each_text(credentials))"
    " FROM targets WHERE name = $1 FOR UPDATE"};

// Every target's secrets as stored, locked for reseal (a handful of rows: no index needed).
inline constexpr Statement kLockHttpTargetSecrets{"target_lock_secrets", R"SQL(
SELECT name, signing_secret,
       (SELECT coalesce(array_agg(key ORDER BY key), '{}')::text FROM jsonb_each_text(headers)),
       (SELECT coalesce(array_agg(value ORDER BY key), '{}')::text FROM jsonb_each_text(headers)),
       (SELECT coalesce(array_agg(key ORDER BY key), '{}')::text FROM jsonb_each_text(credentials)),
       (SELECT coalesce(array_agg(value ORDER BY key), '{}')::text FROM jsonb_each_text(credentials))
FROM targets ORDER BY name FOR UPDATE)SQL"};

// One target's secrets encrypted anew; its settings are the same, so updated_at stays.
inline constexpr Statement kResealHttpTarget{"target_reseal", R"SQL(
UPDATE targets SET signing_secret = $2, headers = jsonb_object($3::text[], $4::text[]),
                   credentials = jsonb_object($5::text[], $6::text[])
WHERE name = $1)SQL"};

inline constexpr Statement kDeleteHttpTarget{"target_delete",
    "DELETE FROM targets WHERE name = $1 RETURNING name"};

// What nodes saw since their last report: the latest error replaces the recorded one (with
// the database's now() as its time); a success only moves last_success_at.
inline constexpr Statement kReportHttpTargets{"target_report", R"SQL(
UPDATE targets t
SET last_error = coalesce(u.error, t.last_error),
    last_error_at = CASE WHEN u.error IS NOT NULL THEN now() ELSE t.last_error_at END,
    last_success_at = CASE WHEN u.succeeded THEN now() ELSE t.last_success_at END
FROM unnest($1::text[], $2::text[], $3::boolean[]) AS u(name, error, succeeded)
WHERE t.name = u.name)SQL"};

// Every statement TargetStore runs.
inline constexpr std::array kTargetStatements{
    kPutHttpTarget, kGetHttpTarget, kListHttpTargets, kLockHttpTargetSecret,
    kLockHttpTargetSecrets, kResealHttpTarget, kDeleteHttpTarget, kReportHttpTargets};

// clang-format on

}  // namespace outboxd::store::sql
