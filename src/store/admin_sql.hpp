#pragma once

// The API lane's statements about rows, workflows, dead letters and namespaces
// (AdminStore): staging, lookups, pause, resume and cancel, dead-letter listings and bulk
// operations, namespace settings and counts. Off the hot paths. Internal to src/store.

#include <array>

#include "pg_codec.hpp"
#include "pg_session.hpp"
#include "row_columns.hpp"
#include "shared_sql.hpp"

namespace outboxd::store::sql {

// clang-format off

inline constexpr Statement kAppend{"outbox_append", R"SQL(
INSERT INTO outbox (dispatch_key, workflow_id, ordinal, run_id, namespace, task_queue, node,
                    activity_type, input, attempt, visible_after, priority, traceparent)
SELECT coalesce(t.dispatch_key, t.workflow_id || ':' || t.ordinal), t.workflow_id, t.ordinal,
       t.run_id, t.namespace, t.task_queue, t.node, t.activity_type, t.input::jsonb, t.attempt,
       coalesce()SQL" OUTBOXD_SQL_INSTANT("t.visible_after_us") R"SQL(, now()), t.priority,
       t.traceparent
FROM unnest($1::text[], $2::text[], $3::bigint[], $4::text[], $5::text[], $6::text[], $7::text[],
            $8::text[], $9::text[], $10::int[], $11::bigint[], $12::smallint[], $13::text[])
     WITH ORDINALITY
     AS t(dispatch_key, workflow_id, ordinal, run_id, namespace, task_queue, node,
          activity_type, input, attempt, visible_after_us, priority, traceparent, n)
ORDER BY t.n
ON CONFLICT (dispatch_key) DO NOTHING
RETURNING dispatch_key)SQL"};

// Remembers the cancel (rows staged later are settled too) and settles the live rows, in
// one statement.
// The workflow's live rows: its pending ones through the workflow-order index, its claimed
// ones through the claimed-rows index (unordered claims are not in the former, 0014), so
// that neither part reads the table.
// The claimed ones are signalled (README, "Cancel signals"): their task ids ("<id>.<token>",
// the tokens as the statement found them) go to every node on the wake channel as
// "cancel:<id>,<id>,…", 100 to a notification (payloads are bounded at 8,000 bytes; 100
// ids of 39 bytes at most take under 4,100); the
// node holding a task tells its worker.
inline constexpr Statement kCancelWorkflow{"outbox_cancel_workflow",
    "WITH remembered AS (INSERT INTO cancelled_workflows (workflow_id) VALUES ($1)"
    "   ON CONFLICT (workflow_id) DO NOTHING),"
    " live AS (SELECT id, claim_token FROM outbox WHERE workflow_id = $1 AND status = 'pending'"
    "   UNION ALL SELECT id, claim_token FROM outbox WHERE workflow_id = $1 AND status = 'claimed'),"
    " settled AS (UPDATE outbox SET status = 'cancelled', finished_at = now(), " OUTBOXD_CLEAR_CLAIM
    "   WHERE id = ANY (ARRAY(SELECT id FROM live)) AND status IN ('pending', 'claimed')"
    "   RETURNING id, dispatch_key, namespace),"
    " signalled AS (SELECT pg_notify('outbox_wake', 'cancel:' || string_agg(t.task_id, ','))"
    "   FROM (SELECT l.id || '.' || l.claim_token AS task_id, row_number() OVER () / 100 AS chunk"
    "         FROM live l JOIN settled s ON s.id = l.id WHERE l.claim_token IS NOT NULL) t"
    "   GROUP BY t.chunk)"
    " SELECT s.dispatch_key, s.namespace FROM settled s"
    "   CROSS JOIN (SELECT count(*) FROM signalled) n"};

inline constexpr Statement kFind{"outbox_find",
    "SELECT " OUTBOXD_ROW_COLUMNS " FROM outbox o WHERE o.dispatch_key = $1"};

// The rows of workflow $1 that its order depends on (pending, claimed, dead-lettered), in
// order, at most $2.
inline constexpr Statement kWorkflowRows{"outbox_workflow_rows",
    "SELECT * FROM ("
    " (SELECT " OUTBOXD_ROW_COLUMNS ", o.ordinal AS o_ordinal, o.id AS o_id FROM outbox o"
    "  WHERE o.workflow_id = $1 AND o.status IN ('pending', 'failed')"
    "  ORDER BY o.ordinal, o.id LIMIT $2)"
    " UNION ALL"
    " (SELECT " OUTBOXD_ROW_COLUMNS ", o.ordinal, o.id FROM outbox o"
    "  WHERE o.workflow_id = $1 AND o.status = 'claimed' LIMIT $2)) r"
    " ORDER BY r.o_ordinal, r.o_id LIMIT $2"};

// Every row of workflow $1, in order, at most $2.
inline constexpr Statement kAllWorkflowRows{"outbox_all_workflow_rows",
    "SELECT " OUTBOXD_ROW_COLUMNS " FROM outbox o WHERE o.workflow_id = $1"
    " ORDER BY o.ordinal, o.id LIMIT $2"};

// The namespaces a workflow's rows are in (whether a scoped operator may change it).
inline constexpr Statement kWorkflowNamespaces{"outbox_workflow_namespaces",
    "SELECT DISTINCT namespace FROM outbox WHERE workflow_id = $1"};

inline constexpr Statement kPauseWorkflow{"outbox_pause_workflow", R"SQL(
INSERT INTO paused_workflows (workflow_id) VALUES ($1)
ON CONFLICT (workflow_id) DO NOTHING RETURNING workflow_id)SQL"};

// Wakes every node to claim from the front: the workflow's rows kept their place in line,
// behind where claims read on, and on any node.
inline constexpr Statement kResumeWorkflow{"outbox_resume_workflow",
    "WITH resumed AS (DELETE FROM paused_workflows WHERE workflow_id = $1 RETURNING workflow_id)"
    " SELECT workflow_id, pg_notify('outbox_wake', 'front') FROM resumed"};

// Forgets that workflow $1 was cancelled: rows staged under it from now on run. Rows already
// cancelled stay so. Wakes every node to claim from the front, as a resume does, for rows
// staged while it was cancelled that the reconcile has not settled yet.
inline constexpr Statement kUncancelWorkflow{"outbox_uncancel_workflow",
    "WITH forgotten AS (DELETE FROM cancelled_workflows WHERE workflow_id = $1"
    "   RETURNING workflow_id)"
    " SELECT workflow_id, pg_notify('outbox_wake', 'front') FROM forgotten"};

// Dead letters matching a filter: $1 namespaces, $2 activity type, $3 text the last error
// contains, $4 failed at least this many seconds ago (database clock); NULL: any.
#define OUTBOXD_DEAD_LETTER_FILTER                                                     \
    "status = 'failed' AND ($1::text[] IS NULL OR namespace = ANY ($1::text[]))"      \
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

// Every statement AdminStore runs.
inline constexpr std::array kAdminStatements{
    kAppend, kCancelWorkflow, kFind, kWorkflowRows, kAllWorkflowRows, kWorkflowNamespaces, kPauseWorkflow,
    kResumeWorkflow, kUncancelWorkflow, kListDeadLetters, kRequeueDeadLetters, kPurgeDeadLetters,
    kRequeueDeadLetter, kPutNamespace, kGetNamespace, kListNamespaces, kNamespaceCounts,
    kWorkflowFlags};

// clang-format on

}  // namespace outboxd::store::sql
