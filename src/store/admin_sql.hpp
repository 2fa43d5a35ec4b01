#pragma once

// The statements of the admin API's dead-letter, namespace and HTTP-target routes (the
// AdminStore and TargetStore): off the hot paths, kept apart from them. Part of
// outbox_sql.hpp's catalogue (kOutboxStatements), which includes this file.

#include "pg_codec.hpp"
#include "pg_session.hpp"

namespace outboxd::store::sql {

// clang-format off

// Dead letters matching a filter: $1 namespace, $2 activity type, $3 text the last error
// contains, $4 failed at least this many seconds ago (database clock); NULL: any.
#define OUTBOXD_DEAD_LETTER_FILTER                                                     \
    "status = 'failed' AND ($1::text IS NULL OR namespace = $1)"                      \
    " AND ($2::text IS NULL OR activity_type = $2)"                                    \
    " AND ($3::text IS NULL OR strpos(last_error, $3) > 0)"                            \
    " AND ($4::bigint IS NULL OR finished_at <= now() - $4 * interval '1 second')"

// Newest first, $5 at most, after the cursor $6/$7 (failed_at in µs, id; NULL: the first).
inline constexpr Statement kListDeadLetters{"outbox_list_dead_letters",
    "SELECT dispatch_key, workflow_id, namespace, task_queue, activity_type, attempt,"
    " last_error, " OUTBOXD_SQL_MICROS("finished_at") ", id FROM outbox"
    " WHERE " OUTBOXD_DEAD_LETTER_FILTER
    "   AND ($6::bigint IS NULL OR (finished_at, id) < (" OUTBOXD_SQL_INSTANT("$6::bigint")
    ", $7::bigint))"
    " ORDER BY finished_at DESC, id DESC LIMIT $5"};

// Bulk operations on the dead letters matching the filter, $5 at most, oldest first; rows a
// concurrent operation holds are left to it. A requeue wakes the nodes once.
inline constexpr Statement kRequeueDeadLetters{"outbox_requeue_dead_letters",
    "WITH picked AS (SELECT id FROM outbox WHERE " OUTBOXD_DEAD_LETTER_FILTER
    "   ORDER BY finished_at, id LIMIT $5 FOR UPDATE SKIP LOCKED),"
    " requeued AS (UPDATE outbox o SET status = 'pending', attempt = 0, visible_after = now(),"
    "   finished_at = NULL, waiting = false WHERE o.id = ANY (ARRAY(SELECT id FROM picked))"
    "   RETURNING o.id)"
    " SELECT (SELECT count(*) FROM requeued),"
    "        (SELECT pg_notify('outbox_wake', '') FROM requeued LIMIT 1)::text"};

inline constexpr Statement kPurgeDeadLetters{"outbox_purge_dead_letters",
    "WITH picked AS (SELECT id FROM outbox WHERE " OUTBOXD_DEAD_LETTER_FILTER
    "   ORDER BY finished_at, id LIMIT $5 FOR UPDATE SKIP LOCKED),"
    " purged AS (DELETE FROM outbox o WHERE o.id = ANY (ARRAY(SELECT id FROM picked))"
    "   RETURNING o.id)"
    " SELECT count(*) FROM purged"};

// Due now, so ahead of where claims read on: a plain wake (no insert trigger fires).
inline constexpr Statement kRequeueDeadLetter{"outbox_requeue_dead_letter", R"SQL(
WITH requeued AS (
    UPDATE outbox SET status = 'pending', attempt = 0, visible_after = now(), finished_at = NULL,
                      waiting = false
    WHERE dispatch_key = $1 AND status = 'failed' RETURNING id)
SELECT id, pg_notify('outbox_wake', '') FROM requeued)SQL"};


inline constexpr Statement kPutNamespace{"outbox_put_namespace", R"SQL(
INSERT INTO namespaces (namespace, max_in_flight, placement_mode, placement_nodes, weight,
                        ordering, on_dead_letter, rate_per_second, rate_burst, activities,
                        keep_results)
VALUES ($1, $2, $3, $4::text[], $5, $6, $7, $8, $9, $10::jsonb, $11)
ON CONFLICT (namespace) DO UPDATE
SET max_in_flight = EXCLUDED.max_in_flight, placement_mode = EXCLUDED.placement_mode,
    placement_nodes = EXCLUDED.placement_nodes, weight = EXCLUDED.weight,
    ordering = EXCLUDED.ordering, on_dead_letter = EXCLUDED.on_dead_letter,
    rate_per_second = EXCLUDED.rate_per_second, rate_burst = EXCLUDED.rate_burst,
    activities = EXCLUDED.activities, keep_results = EXCLUDED.keep_results,
    updated_at = now())SQL"};

#define OUTBOXD_NAMESPACE_COLUMNS                                                      \
    "namespace, max_in_flight, placement_mode, placement_nodes::text, weight, ordering," \
    " on_dead_letter, rate_per_second, rate_burst, activities::text, keep_results"

inline constexpr Statement kGetNamespace{"outbox_get_namespace",
    "SELECT " OUTBOXD_NAMESPACE_COLUMNS " FROM namespaces WHERE namespace = $1"};

inline constexpr Statement kListNamespaces{"outbox_list_namespaces",
    "SELECT " OUTBOXD_NAMESPACE_COLUMNS " FROM namespaces ORDER BY namespace"};

// Per namespace: live rows, dead letters and rows finished in the last minute, each read
// through its partial index, and the namespaces with settings.
inline constexpr Statement kNamespaceCounts{"outbox_namespace_counts", R"SQL(
SELECT namespace, sum(pending)::bigint, sum(claimed)::bigint, sum(dead)::bigint,
       sum(done)::bigint, sum(failed)::bigint, sum(cancelled)::bigint
FROM (
    SELECT namespace, count(*) FILTER (WHERE status = 'pending') AS pending,
           count(*) FILTER (WHERE status = 'claimed') AS claimed, 0 AS dead, 0 AS done,
           0 AS failed, 0 AS cancelled
    FROM outbox WHERE status IN ('pending', 'claimed') GROUP BY namespace
    UNION ALL
    SELECT namespace, 0, 0, count(*), 0, 0, 0 FROM outbox WHERE status = 'failed'
    GROUP BY namespace
    UNION ALL
    SELECT namespace, 0, 0, 0, count(*) FILTER (WHERE status = 'done'),
           count(*) FILTER (WHERE status = 'failed'), count(*) FILTER (WHERE status = 'cancelled')
    FROM outbox
    WHERE status IN ('done', 'failed', 'cancelled') AND finished_at > now() - interval '1 minute'
    GROUP BY namespace
    UNION ALL
    SELECT namespace, 0, 0, 0, 0, 0, 0 FROM namespaces) c
GROUP BY namespace ORDER BY namespace LIMIT $1)SQL"};

inline constexpr Statement kWorkflowFlags{"outbox_workflow_flags", R"SQL(
SELECT EXISTS (SELECT 1 FROM paused_workflows WHERE workflow_id = $1),
       EXISTS (SELECT 1 FROM cancelled_workflows WHERE workflow_id = $1))SQL"};

// HTTP push targets. Headers travel as two text arrays (names, values) and are kept as one
// jsonb object; they read back ordered by name.
inline constexpr Statement kPutHttpTarget{"http_target_put", R"SQL(
INSERT INTO http_targets (name, namespace, task_queue, activity_types, url, max_in_flight,
                          timeout_ms, signing_secret, headers, ca_file)
VALUES ($1, $2, $3, $4::text[], $5, $6, $7, $8, jsonb_object($9::text[], $10::text[]), $11)
ON CONFLICT (name) DO UPDATE
SET namespace = EXCLUDED.namespace, task_queue = EXCLUDED.task_queue,
    activity_types = EXCLUDED.activity_types, url = EXCLUDED.url,
    max_in_flight = EXCLUDED.max_in_flight, timeout_ms = EXCLUDED.timeout_ms,
    signing_secret = EXCLUDED.signing_secret, headers = EXCLUDED.headers,
    ca_file = EXCLUDED.ca_file, updated_at = now(),
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
    OUTBOXD_SQL_MICROS("last_success_at")

inline constexpr Statement kGetHttpTarget{"http_target_get",
    "SELECT " OUTBOXD_HTTP_TARGET_COLUMNS " FROM http_targets WHERE name = $1"};

inline constexpr Statement kListHttpTargets{"http_target_list",
    "SELECT " OUTBOXD_HTTP_TARGET_COLUMNS " FROM http_targets ORDER BY name"};

inline constexpr Statement kDeleteHttpTarget{"http_target_delete",
    "DELETE FROM http_targets WHERE name = $1 RETURNING name"};

// What nodes saw since their last report: the latest error replaces the recorded one (with
// the database's now() as its time); a success only moves last_success_at.
inline constexpr Statement kReportHttpTargets{"http_target_report", R"SQL(
UPDATE http_targets t
SET last_error = coalesce(u.error, t.last_error),
    last_error_at = CASE WHEN u.error IS NOT NULL THEN now() ELSE t.last_error_at END,
    last_success_at = CASE WHEN u.succeeded THEN now() ELSE t.last_success_at END
FROM unnest($1::text[], $2::text[], $3::boolean[]) AS u(name, error, succeeded)
WHERE t.name = u.name)SQL"};

// clang-format on

}  // namespace outboxd::store::sql
