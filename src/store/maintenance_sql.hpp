#pragma once

// The maintenance lane's statements (MaintenanceStore): re-arms of orphaned and stale
// claims, settling rows of cancelled workflows, retention, ordered delivery's backstop and
// the durable gauges' counts. Internal to src/store.

#include <array>

#include "pg_codec.hpp"
#include "pg_session.hpp"
#include "row_columns.hpp"
#include "shared_sql.hpp"

namespace outboxd::store::sql {

// clang-format off

// Re-armed rows are due at once and keep their place in line (their old visible_after).
#define OUTBOXD_REARM_UPDATE                                                           \
    "UPDATE outbox o SET status = 'pending', visible_after = least(o.visible_after, now()), " \
    OUTBOXD_CLEAR_CLAIM \
    " WHERE o.id = ANY (ARRAY(SELECT id FROM picked)) RETURNING " OUTBOXD_ROW_COLUMNS

// $1 owner, $2 ranges, $3 age in ms, $4 limit, $5 grace in ms: claims older than $3, or,
// where the holder wrote a lease for this very claim, whose lease ended more than $5 ago.
inline constexpr Statement kRearmStaleClaimed{"outbox_rearm_stale_claimed",
    "WITH " OUTBOXD_LEASED_SHARDS ","
    " picked AS (SELECT o.id FROM outbox o"
    "   WHERE o.status = 'claimed' AND o.shard <@ (SELECT shards FROM leased)"
    "     AND CASE WHEN o.lease_token = o.claim_token"
    "              THEN o.lease_expires_at < now() - $5 * interval '1 millisecond'"
    "              ELSE o.claimed_at < now() - $3 * interval '1 millisecond' END"
    "   ORDER BY o.claimed_at, o.id LIMIT $4 FOR UPDATE OF o SKIP LOCKED) "
    OUTBOXD_REARM_UPDATE};

// $1 owner, $2 ranges, $3 liveness window in ms, $4 limit.
inline constexpr Statement kRearmOrphaned{"outbox_rearm_orphaned",
    "WITH " OUTBOXD_LEASED_SHARDS ","
    " live AS MATERIALIZED (SELECT incarnation FROM dispatcher_nodes"
    "   WHERE heartbeat_at > now() - $3 * interval '1 millisecond'),"
    " picked AS (SELECT o.id FROM outbox o"
    "   WHERE o.status = 'claimed' AND o.claimed_by <> $1"
    "     AND o.claimed_by NOT IN (SELECT incarnation FROM live)"
    "     AND o.shard <@ (SELECT shards FROM leased)"
    "   ORDER BY o.claimed_at, o.id LIMIT $4 FOR UPDATE OF o SKIP LOCKED) "
    OUTBOXD_REARM_UPDATE};

// $1 owner, $2 ranges: pending rows of cancelled workflows on shards leased to the owner
// (claimed rows never belong to a cancelled workflow: claims skip them, and the cancel
// statement settles the rows claimed before it). A cancel that settles rows is as recent as
// they: its marker's time moves on with them (kPruneMarkers).
inline constexpr Statement kSettleCancelled{"outbox_settle_cancelled",
    "WITH " OUTBOXD_LEASED_SHARDS ","
    " settled AS (UPDATE outbox o SET status = 'cancelled', finished_at = now(), "
    OUTBOXD_CLEAR_CLAIM
    "   FROM cancelled_workflows c"
    "   WHERE o.workflow_id = c.workflow_id AND o.status = 'pending'"
    "     AND o.shard <@ (SELECT shards FROM leased)"
    "   RETURNING o.dispatch_key, o.namespace, o.workflow_id),"
    " touched AS (UPDATE cancelled_workflows SET cancelled_at = now()"
    "   WHERE workflow_id IN (SELECT workflow_id FROM settled))"
    " SELECT dispatch_key, namespace FROM settled"};

// Whether a reconcile has anything to look at: claims anywhere (orphaned and stale claims are
// claims), cancelled workflows (whose rows it settles). Two probes of small indexes, so that a
// quiet database pays one cheap statement a second instead of the reconcile's three.
inline constexpr Statement kReconcileWork{"outbox_reconcile_work",
    "SELECT EXISTS (SELECT 1 FROM outbox WHERE status = 'claimed'),"
    " EXISTS (SELECT 1 FROM cancelled_workflows)"};

// One count per status, so that each reads its own partial index: `status IN (…)` over a
// long history was a (parallel) scan of the whole table.
inline constexpr Statement kCountLiveByNamespace{"outbox_count_live_by_namespace", R"SQL(
SELECT namespace, sum(live)::bigint, sum(claimed)::bigint FROM (
    SELECT namespace, count(*) AS live, 0::bigint AS claimed FROM outbox
    WHERE status = 'pending' AND shard <@ $1::int4multirange GROUP BY namespace
    UNION ALL
    SELECT namespace, count(*), count(*) FROM outbox
    WHERE status = 'claimed' AND shard <@ $1::int4multirange GROUP BY namespace) counts
GROUP BY namespace)SQL"};

// Dead letters are kept until requeued or removed by an operator: retention never
// deletes a row nobody has looked at.
inline constexpr Statement kDeleteFinished{"outbox_delete_finished", R"SQL(
DELETE FROM outbox WHERE id IN (
    SELECT id FROM outbox
    WHERE status IN ('done', 'cancelled') AND finished_at < now() - $1 * interval '1 millisecond'
    ORDER BY finished_at LIMIT $2))SQL"};

// Cancel and pause markers that ended their use: older than $1 ms (a cancel's time moves on
// with every row it settles) and no row of the workflow left to hold (pending or dead-lettered:
// the live-row index by workflow). Rows the cancel settled are then past retention too. A row
// staged under the id later runs.
inline constexpr Statement kPruneMarkers{"outbox_prune_markers", R"SQL(
WITH cancels AS (
  DELETE FROM cancelled_workflows c
  WHERE c.cancelled_at < now() - $1 * interval '1 millisecond'
    AND NOT EXISTS (SELECT 1 FROM outbox o
                    WHERE o.workflow_id = c.workflow_id AND o.status IN ('pending', 'failed'))
  RETURNING 1),
pauses AS (
  DELETE FROM paused_workflows p
  WHERE p.paused_at < now() - $1 * interval '1 millisecond'
    AND NOT EXISTS (SELECT 1 FROM outbox o
                    WHERE o.workflow_id = p.workflow_id AND o.status IN ('pending', 'failed'))
  RETURNING 1)
SELECT (SELECT count(*) FROM cancels), (SELECT count(*) FROM pauses))SQL"};

// The backstop of ordered delivery (an outcome write lets the next row go; a claim that
// parked a row while that write ran leaves it to this): of the waiting rows on shards $1 of
// ordered namespaces $2, the first of each workflow that nothing holds back any more (no
// earlier row pending, claimed or, unless its namespace is in $3 (skip), dead-lettered) is
// let go; at most $4 rows.
inline constexpr Statement kLetGoWaiting{"outbox_let_go_waiting",
    "UPDATE outbox o SET waiting = false, visible_after = greatest(o.visible_after, now())"
    " WHERE o.id = ANY (ARRAY("
    "   SELECT h.id FROM (SELECT DISTINCT ON (w.workflow_id) w.id, w.workflow_id, w.ordinal,"
    "                            w.namespace"
    "                     FROM outbox w"
    "                     WHERE w.status = 'pending' AND w.waiting"
    "                       AND w.shard <@ $1::int4multirange AND w.namespace = ANY ($2::text[])"
    "                     ORDER BY w.workflow_id, w.ordinal, w.id) h"
    "   WHERE NOT " OUTBOXD_HAS_EARLIER("h", "h.namespace <> ALL ($3::text[])")
    "   LIMIT $4))"
    " RETURNING o.id"};

// Waiting rows on shards $1 of namespaces not ordered (any more): not in $2. At most $3 rows.
inline constexpr Statement kReleaseUnordered{"outbox_release_unordered", R"SQL(
UPDATE outbox o SET waiting = false, visible_after = greatest(o.visible_after, now())
WHERE o.id = ANY (ARRAY(
    SELECT w.id FROM outbox w
    WHERE w.status = 'pending' AND w.waiting AND w.shard <@ $1::int4multirange
      AND w.namespace <> ALL ($2::text[])
    LIMIT $3))
RETURNING o.id)SQL"};

// Workflows of ordered namespaces $2 (on_dead_letter block) on shards $1 held back by a dead
// letter: a failed row with a later row of its workflow pending. Per namespace.
inline constexpr Statement kCountBlockedWorkflows{"outbox_count_blocked_workflows", R"SQL(
SELECT f.namespace, count(DISTINCT f.workflow_id) FROM outbox f
WHERE f.status = 'failed' AND f.namespace = ANY ($2::text[]) AND f.shard <@ $1::int4multirange
  AND EXISTS (SELECT 1 FROM outbox s WHERE s.workflow_id = f.workflow_id AND s.status = 'pending'
                AND (s.ordinal, s.id) > (f.ordinal, f.id))
GROUP BY f.namespace)SQL"};

// Every statement MaintenanceStore runs.
inline constexpr std::array kMaintenanceStatements{
    kReconcileWork, kRearmStaleClaimed, kRearmOrphaned, kSettleCancelled, kCountLiveByNamespace,
    kDeleteFinished, kPruneMarkers, kLetGoWaiting, kReleaseUnordered, kCountBlockedWorkflows};

// clang-format on

}  // namespace outboxd::store::sql
