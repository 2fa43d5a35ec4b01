#pragma once

// Every statement the outbox store runs, as a named constant. The name keys the prepared
// statement and the store's error messages. The admin routes' statements are in
// admin_sql.hpp; kOutboxStatements lists them all.

#include <array>

#include "admin_sql.hpp"
#include "pg_codec.hpp"
#include "pg_session.hpp"
#include "schedule_sql.hpp"

namespace outboxd::store::sql {

// The SQL is laid out by hand, as SQL reads; clang-format would reflow it as C++.
// clang-format off

// Columns read back for an OutboxRow, in decode_row's order.
#define OUTBOXD_ROW_COLUMNS                                                         \
    "o.id, o.dispatch_key, o.workflow_id, o.ordinal, o.run_id, o.namespace,"       \
    " o.task_queue, o.node, o.activity_type, o.input::text, o.status, o.attempt, " \
    OUTBOXD_SQL_MICROS("o.visible_after") ", "                                     \
    OUTBOXD_SQL_MICROS("o.claimed_at") ", o.claimed_by, o.claim_token,"            \
    " o.last_error, "                                                              \
    OUTBOXD_SQL_MICROS("o.created_at") ", "                                        \
    OUTBOXD_SQL_MICROS("o.finished_at") ", o.shard, o.priority, o.waiting,"         \
    " o.result::text, o.traceparent, " OUTBOXD_SQL_MICROS("o.heartbeat_at") ","        \
    " o.progress::text"

// Paused and cancelled workflows are excluded inside the claim, before the LIMIT, so held
// rows never take a slot of it.
#define OUTBOXD_NOT_HELD                                                                 \
    " AND NOT EXISTS (SELECT 1 FROM paused_workflows p WHERE p.workflow_id = o.workflow_id)" \
    " AND NOT EXISTS (SELECT 1 FROM cancelled_workflows c WHERE c.workflow_id = o.workflow_id)"

// A claim checks the lease of each candidate row's shard by primary key, where aggregating
// every lease of the range costs ~0.5 ms per statement whatever it claims. A scalar
// subquery, not EXISTS: the planner turns an EXISTS into a join and, for a large claim,
// may pick a nested loop comparing every candidate with every lease (EXPLAIN ANALYZE of a
// 1,024-row claim of a freshly analysed 300k-row table, one owner of all 1,024 shards:
// 530k comparisons, ~57 of ~100 ms), where a probe per row costs ~2 µs.
// $1 incarnation, $2 ranges.
#define OUTBOXD_CLAIMABLE                                                              \
    "o.status = 'pending' AND NOT o.waiting AND o.visible_after <= now()"               \
    " AND o.shard <@ $2::int4multirange"                                                 \
    " AND (SELECT l.owner = $1 AND l.expires_at > now() FROM shard_leases l"          \
    "      WHERE l.shard = o.shard)" OUTBOXD_NOT_HELD

// `id = ANY(ARRAY(…))` makes the update a primary-key probe per picked row; a join on
// `picked` lets the planner hash the whole table when it underestimates the pick.
// A claim returns only what a task needs (decode_claimed's order): every row of one claim
// shares its instant and token, computed once in the `token` CTE.
#define OUTBOXD_CLAIMED_COLUMNS                                                          \
    "o.id, o.dispatch_key, o.workflow_id, o.ordinal, o.run_id, o.namespace,"          \
    " o.task_queue, o.node, o.activity_type, o.input::text, o.attempt, "              \
    OUTBOXD_SQL_MICROS("o.visible_after") ", o.claim_token, o.shard,"                 \
    " (SELECT at FROM token), o.priority, o.traceparent"

#define OUTBOXD_CLAIM_TOKEN                                                            \
    " token AS MATERIALIZED (SELECT nextval('outbox_claim_token_seq') AS value, "     \
    OUTBOXD_SQL_MICROS("now()") " AS at),"

#define OUTBOXD_CLAIM_UPDATE_SETTING(also)                                              \
    "UPDATE outbox o SET status = 'claimed', claimed_at = now(), claimed_by = $1,"    \
    " claim_token = (SELECT value FROM token)" also                                    \
    " WHERE o.id = ANY (ARRAY(SELECT id FROM picked)) RETURNING " OUTBOXD_CLAIMED_COLUMNS
#define OUTBOXD_CLAIM_UPDATE OUTBOXD_CLAIM_UPDATE_SETTING("")

// Whether row `o` of an ordered namespace has an earlier row of its workflow pending,
// claimed by an ordered claim or, with `failed_blocks`, dead-lettered: one probe of
// outbox_workflow_order_idx, whose predicate (0014) the second line repeats word for word.
#define OUTBOXD_HAS_EARLIER(o, failed_blocks)                                          \
    "EXISTS (SELECT 1 FROM outbox p WHERE p.workflow_id = " o ".workflow_id"          \
    "   AND (p.status IN ('pending', 'failed') OR (p.status = 'claimed' AND p.holds_order))" \
    "   AND (p.ordinal, p.id) < (" o ".ordinal, " o ".id)"                             \
    "   AND (p.status <> 'failed' OR " failed_blocks "))"

#define OUTBOXD_CLEAR_CLAIM "claimed_at = NULL, claimed_by = NULL, claim_token = NULL"

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


// Whether a row of a priority above 0 is ready anywhere: one probe of the (small, usually
// empty) priority index, evaluated once per statement (an InitPlan), so that a claim runs
// its priority scans only while such rows exist.
#define OUTBOXD_PRIORITY_GATE                                                          \
    "(SELECT EXISTS (SELECT 1 FROM outbox x"                                          \
    "   WHERE x.status = 'pending' AND NOT x.waiting AND x.priority > 0))"

// The route of a one-route claim: $3 namespace, $4 task_queue, $5 node label (NULL: unpinned
// rows only), $6 activity types (empty: any), $8 whether unpinned rows are in scope.
#define OUTBOXD_ONE_ROUTE                                                              \
    " AND o.namespace = $3 AND o.task_queue = $4 AND (o.node = $5 OR ($8 AND o.node IS NULL))" \
    " AND (cardinality($6::text[]) = 0 OR o.activity_type = ANY ($6::text[]))"

// A claim of one route, $7 rows at most: its ready rows of a priority above 0, highest
// first (from the front of the priority index, however long the backlog before them), or,
// when it has none, the rest oldest first, `after` bounding that scan (a claim that found
// priority rows takes only those; the next one takes the rest). Both LIMITs are the plain
// parameter: an expression there makes the planner cost the whole backlog's scan (and, over
// jit_above_cost, compile the statement: 30 ms a claim).
#define OUTBOXD_CLAIM_SCOPED(after)                                                      \
    "WITH " OUTBOXD_CLAIM_TOKEN                                                         \
    " prio AS MATERIALIZED (SELECT o.id FROM outbox o WHERE " OUTBOXD_PRIORITY_GATE      \
    "   AND " OUTBOXD_CLAIMABLE OUTBOXD_ONE_ROUTE " AND o.priority > 0"                  \
    "   ORDER BY o.namespace, o.task_queue, o.priority DESC, o.visible_after, o.id"      \
    "   LIMIT $7 FOR UPDATE OF o SKIP LOCKED),"                                          \
    " rest AS MATERIALIZED (SELECT o.id FROM outbox o WHERE NOT EXISTS (SELECT 1 FROM prio)" \
    "   AND " OUTBOXD_CLAIMABLE OUTBOXD_ONE_ROUTE after                                   \
    "   ORDER BY o.namespace, o.task_queue, o.visible_after, o.id"                      \
    "   LIMIT $7 FOR UPDATE OF o SKIP LOCKED),"                                          \
    " picked AS (SELECT id FROM prio UNION ALL SELECT id FROM rest) "                   \
    OUTBOXD_CLAIM_UPDATE

// A claim of one route of an ordered namespace (README, "Delivery controls"): $7 candidates
// at most, oldest first; a candidate with an earlier row of its workflow pending, claimed
// or, with $9 (on_dead_letter block), dead-lettered is not claimed but waits (it leaves the
// claimable index until an outcome write or the maintenance sweep lets it go), the others
// are claimed. Checked inside the statement on the rows themselves, so that it holds
// whichever node claimed the earlier row.
#define OUTBOXD_CLAIM_ORDERED(after)                                                     \
    "WITH " OUTBOXD_CLAIM_TOKEN                                                         \
    " cand AS MATERIALIZED (SELECT o.id, NOT " OUTBOXD_HAS_EARLIER("o", "$9") " AS head" \
    "   FROM outbox o WHERE " OUTBOXD_CLAIMABLE OUTBOXD_ONE_ROUTE after                  \
    "   ORDER BY o.namespace, o.task_queue, o.visible_after, o.id"                      \
    "   LIMIT $7 FOR UPDATE OF o SKIP LOCKED),"                                          \
    " parked AS (UPDATE outbox o SET waiting = true FROM cand c"                        \
    "   WHERE o.id = c.id AND NOT c.head),"                                              \
    " picked AS (SELECT id FROM cand WHERE head) "                                      \
    OUTBOXD_CLAIM_UPDATE_SETTING(", holds_order = true")

// From the first due row of the route: the paced backstop. Planned per execution, with the
// route's own statistics: while the statistics know a single route, a generic plan would
// read the index of all due rows, and a new small route's claim from the front would walk
// the whole backlog of the others.
inline constexpr Statement kClaimScoped{"outbox_claim_scoped", OUTBOXD_CLAIM_SCOPED("")};

// After the claim position $9/$10 (visible_after in µs, id), the claim of every wake: the
// bound is an index condition, so whichever index the plan reads, it starts near the
// newest rows. Planned once per connection (Plan::generic): planning it cost more than
// running it (0.76 vs 0.44 ms per claim at 1,000 rows/s, pg_stat_statements), time spent
// on the latency path of every row.
inline constexpr Statement kClaimScopedAfter{"outbox_claim_scoped_after",
    OUTBOXD_CLAIM_SCOPED(" AND (o.visible_after, o.id) >"
                         " (" OUTBOXD_SQL_INSTANT("$9::bigint") ","
                         "  $10::bigint)"),
    Plan::generic};

// The ordered claims, from the front and after the position $10/$11, planned as the scoped
// ones are.
inline constexpr Statement kClaimOrdered{"outbox_claim_ordered", OUTBOXD_CLAIM_ORDERED("")};
inline constexpr Statement kClaimOrderedAfter{"outbox_claim_ordered_after",
    OUTBOXD_CLAIM_ORDERED(" AND (o.visible_after, o.id) >"
                          " (" OUTBOXD_SQL_INSTANT("$10::bigint") ","
                          "  $11::bigint)"),
    Plan::generic};

// Claims of several routes in one statement (one round trip, however many routes have work):
// each route's rows are read by its own index scan (LATERAL), in claim order, after its
// position ($9/$10: µs and id; NULL: from the front), up to its limit. $3..$10 are arrays, one
// element per route: namespace, task_queue, node label (NULL: unpinned only), whether
// unpinned rows are in scope, activity types as a text[] literal ('{}': any), limit,
// position. Ordering each scan by the whole route key makes the route index the only one
// that yields the order without a sort (sorts are a last resort on store sessions), so the
// plan cannot drift to walking the due index across every route. The update joins the
// picked rows by primary key (generic plans forbid hash and merge joins) and returns each
// row with its route's ordinal. Planned once per connection: the routes are run-time values
// either way.
// The route of one element of kClaimRoutes' arrays.
#define OUTBOXD_ROUTE_OF_R                                                               \
    " AND o.namespace = r.ns AND o.task_queue = r.tq"                                    \
    " AND (o.node = r.node OR (r.unpinned AND o.node IS NULL))"                          \
    " AND (cardinality(r.types::text[]) = 0 OR o.activity_type = ANY (r.types::text[]))"

inline constexpr Statement kClaimRoutes{"outbox_claim_routes",
    "WITH " OUTBOXD_CLAIM_TOKEN
    " routes AS (SELECT * FROM unnest($3::text[], $4::text[], $5::text[], $6::bool[], $7::text[],"
    "   $8::int[], $9::bigint[], $10::bigint[]) WITH ORDINALITY"
    "   AS r(ns, tq, node, unpinned, types, lim, after_us, after_id, n)),"
    " prio AS MATERIALIZED (SELECT c.id, r.n FROM routes r CROSS JOIN LATERAL ("
    "   SELECT o.id FROM outbox o WHERE " OUTBOXD_PRIORITY_GATE " AND " OUTBOXD_CLAIMABLE
    OUTBOXD_ROUTE_OF_R " AND o.priority > 0"
    "   ORDER BY o.namespace, o.task_queue, o.priority DESC, o.visible_after, o.id"
    "   LIMIT r.lim FOR UPDATE OF o SKIP LOCKED) c),"
    " rest AS MATERIALIZED (SELECT c.id, r.n FROM routes r CROSS JOIN LATERAL ("
    "   SELECT o.id FROM outbox o WHERE NOT EXISTS (SELECT 1 FROM prio p WHERE p.n = r.n)"
    "     AND " OUTBOXD_CLAIMABLE OUTBOXD_ROUTE_OF_R
    "     AND (o.visible_after, o.id) > (coalesce(" OUTBOXD_SQL_INSTANT("r.after_us") ","
    "                                          '-infinity'::timestamptz), coalesce(r.after_id, 0))"
    "   ORDER BY o.namespace, o.task_queue, o.visible_after, o.id"
    "   LIMIT r.lim FOR UPDATE OF o SKIP LOCKED) c),"
    " picked AS (SELECT id, n FROM prio UNION ALL SELECT id, n FROM rest)"
    " UPDATE outbox o SET status = 'claimed', claimed_at = now(), claimed_by = $1,"
    " claim_token = (SELECT value FROM token)"
    " FROM picked p WHERE o.id = p.id RETURNING " OUTBOXD_CLAIMED_COLUMNS ", p.n",
    Plan::generic};

// Which of the routes ($3..$7 as in kClaimRoutes) have a row a claim would take now on the
// owner's leased shards: one index probe each, stopping at the first such row. Returns the
// ordinals of those that do. A LATERAL … LIMIT 1 per route, not EXISTS: the planner turned
// the EXISTS into a semi-join that materialised every due row of every route and compared
// each with each route (EXPLAIN ANALYZE, 1,000 idle routes beside a 200,000-row backlog:
// 17 s), where a probe per route is an index descent.
inline constexpr Statement kRoutesWithDueRows{"outbox_routes_with_due_rows",
    "SELECT r.n FROM unnest($3::text[], $4::text[], $5::text[], $6::bool[], $7::text[])"
    "   WITH ORDINALITY AS r(ns, tq, node, unpinned, types, n)"
    " CROSS JOIN LATERAL (SELECT 1 FROM outbox o WHERE " OUTBOXD_CLAIMABLE
    "   AND o.namespace = r.ns AND o.task_queue = r.tq"
    "   AND (o.node = r.node OR (r.unpinned AND o.node IS NULL))"
    "   AND (cardinality(r.types::text[]) = 0 OR o.activity_type = ANY (r.types::text[]))"
    "   ORDER BY o.visible_after, o.id LIMIT 1) due",
    Plan::generic};

// One statement for a batch of outcomes; each applies only while its claim token matches.
// A token is set only while the row is claimed (CHECK outbox_claim_fields_iff_claimed), so
// the statement names no status: with `status = 'claimed'` the planner may drive the join
// from the claimed-rows index, walking every entry of it (all dead rows included, under an
// old snapshot) per batch, instead of probing the primary key once per outcome.
// Planned once per connection (Plan::generic), as a probe of the primary key per outcome
// whatever the batch: planning it cost ~0.3 ms per write, close to the ~0.4 ms of running
// a write of a few outcomes (pg_stat_statements at 1,000 rows/s).
// $6: the results, one JSON array: a done outcome's result is element n of it (parsed once,
// as jsonb, for the whole batch; an element is read by its offset), JSON null or none for no
// result; any other outcome leaves none. An attempt count saturates: a row staged by plain
// SQL may already hold the largest int. An immediate re-arm (failover, release) keeps the
// row's place in line: it was due already, and going to the back of a long backlog would
// delay the failover.
#define OUTBOXD_RECORD_OUTCOMES                                                          \
    " UPDATE outbox o SET"                                                                \
    "   status = CASE t.kind WHEN 'done' THEN 'done' WHEN 'fail' THEN 'failed'"           \
    "                        ELSE 'pending' END,"                                         \
    "   attempt = CASE WHEN t.kind IN ('retry', 'fail') AND o.attempt < 2147483647"       \
    "                  THEN o.attempt + 1 ELSE o.attempt END,"                            \
    "   visible_after = CASE"                                                             \
    "       WHEN t.kind = 'release' OR (t.kind = 'retry' AND t.delay_ms = 0)"             \
    "           THEN least(o.visible_after, now())"                                       \
    "       WHEN t.kind = 'retry' THEN now() + t.delay_ms * interval '1 millisecond'"     \
    "       ELSE o.visible_after END,"                                                    \
    "   last_error = CASE WHEN t.kind IN ('retry', 'fail') THEN t.error ELSE o.last_error END," \
    "   finished_at = CASE WHEN t.kind IN ('done', 'fail') THEN now() END,"               \
    "   result = CASE WHEN t.kind = 'done' THEN nullif($6::jsonb -> (t.n::int - 1), 'null') END," \
    "   claimed_at = NULL, claimed_by = NULL, claim_token = NULL"                         \
    " FROM unnest($1::bigint[], $2::bigint[], $3::text[], $4::bigint[], $5::text[])"      \
    "      WITH ORDINALITY AS t(id, token, kind, delay_ms, error, n)"                     \
    " WHERE o.id = t.id AND o.claim_token = t.token"                                      \
    " RETURNING t.id, t.token"

inline constexpr Statement kRecordOutcomes{"outbox_record_outcomes", OUTBOXD_RECORD_OUTCOMES,
    Plan::generic};

// The same write for a batch that ends rows of ordered namespaces. $7: the workflows whose
// row ended with this write: the first waiting row of each is let go, due at once (or at its
// own visible_after, if later). The claim checks again whether it is next: a row let go too
// early waits again. A statement of its own, so that a write of a namespace without
// ordering does not run the let-go CTE with nothing to let go (pg_stat_statements, one-row
// writes at 1,000 rows/s: 171 -> 163 µs a call without it).
inline constexpr Statement kRecordOutcomesLettingGo{"outbox_record_outcomes_letting_go",
    "WITH let_go AS ("
    " UPDATE outbox w SET waiting = false, visible_after = greatest(w.visible_after, now())"
    " WHERE w.id = ANY (ARRAY(SELECT (SELECT x.id FROM outbox x"
    "                                 WHERE x.workflow_id = u.workflow AND x.status = 'pending'"
    "                                   AND x.waiting"
    "                                 ORDER BY x.ordinal, x.id LIMIT 1)"
    "                         FROM unnest($7::text[]) AS u(workflow))))"
    OUTBOXD_RECORD_OUTCOMES, Plan::generic};


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

// Durable deadlines and heartbeats of claims, one statement for a batch; each applies only
// while its claim token matches. $1 ids, $2 tokens, $3 ms until the deadline, $4 whether a
// heartbeat came, $5 progress (JSON text; NULL: none new). Planned once per connection.
inline constexpr Statement kWriteLeases{"outbox_write_leases", R"SQL(
UPDATE outbox o SET
    lease_token = t.token,
    lease_expires_at = now() + t.expires_ms * interval '1 millisecond',
    heartbeat_at = CASE WHEN t.beat THEN now() ELSE o.heartbeat_at END,
    progress = coalesce(t.progress::jsonb, o.progress)
FROM unnest($1::bigint[], $2::bigint[], $3::bigint[], $4::bool[], $5::text[])
     AS t(id, token, expires_ms, beat, progress)
WHERE o.id = t.id AND o.claim_token = t.token)SQL", Plan::generic};

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

// $1 owner, $2 token: the claimer's own claims made after its last known claim (a claim
// whose statement failed may have committed all the same). Attempt preserved.
inline constexpr Statement kReleaseClaimsAfter{"outbox_release_claims_after",
    "UPDATE outbox o SET status = 'pending', visible_after = least(o.visible_after, now()), "
    OUTBOXD_CLEAR_CLAIM
    " WHERE o.status = 'claimed' AND o.claimed_by = $1 AND o.claim_token > $2"
    "   AND o.claim_token <> ALL ($3::bigint[])"};


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

// $1 owner, $2 ranges: pending rows of cancelled workflows on shards leased to the owner
// (claimed rows never belong to a cancelled workflow: claims skip them, and the cancel
// statement settles the rows claimed before it).
inline constexpr Statement kSettleCancelled{"outbox_settle_cancelled",
    "WITH " OUTBOXD_LEASED_SHARDS
    " UPDATE outbox o SET status = 'cancelled', finished_at = now(), " OUTBOXD_CLEAR_CLAIM
    " FROM cancelled_workflows c"
    " WHERE o.workflow_id = c.workflow_id AND o.status = 'pending'"
    "   AND o.shard <@ (SELECT shards FROM leased)"
    " RETURNING o.dispatch_key, o.namespace"};



inline constexpr Statement kCountClaimedByNamespace{"outbox_count_claimed_by_namespace", R"SQL(
SELECT namespace, count(*) FROM outbox
WHERE status = 'claimed' AND namespace = ANY ($1::text[]) AND shard <@ $2::int4multirange
GROUP BY namespace)SQL"};

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

inline constexpr Statement kPauseWorkflow{"outbox_pause_workflow", R"SQL(
INSERT INTO paused_workflows (workflow_id) VALUES ($1)
ON CONFLICT (workflow_id) DO NOTHING RETURNING workflow_id)SQL"};

// Wakes every node to claim from the front: the workflow's rows kept their place in line,
// behind where claims read on, and on any node.
inline constexpr Statement kResumeWorkflow{"outbox_resume_workflow",
    "WITH resumed AS (DELETE FROM paused_workflows WHERE workflow_id = $1 RETURNING workflow_id)"
    " SELECT workflow_id, pg_notify('outbox_wake', 'front') FROM resumed"};


// Dead letters are kept until requeued or removed by an operator: retention never
// deletes a row nobody has looked at.
inline constexpr Statement kDeleteFinished{"outbox_delete_finished", R"SQL(
DELETE FROM outbox WHERE id IN (
    SELECT id FROM outbox
    WHERE status IN ('done', 'cancelled') AND finished_at < now() - $1 * interval '1 millisecond'
    ORDER BY finished_at LIMIT $2))SQL"};


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

// Limits (README, "Delivery controls"), inside one transaction of the claims lane around a
// limited claim. The advisory lock of a limited (namespace, activity type) serialises the
// claims of it across nodes until the transaction ends, so that the count the next
// statement reads (with its own snapshot) is exact.
inline constexpr Statement kLockActivity{"outbox_lock_activity",
    "SELECT pg_advisory_xact_lock(1330601324, hashtext($1 || chr(31) || $2))"};
inline constexpr Statement kCountClaimedOfType{"outbox_count_claimed_of_type",
    "SELECT count(*) FROM outbox WHERE status = 'claimed' AND namespace = $1"
    " AND activity_type = $2"};
// A token bucket (namespace $1, activity type $2: '' for the namespace's) refilled at $3 a
// second up to $4 by the database's clock, and locked until the transaction ends: its
// tokens now (NULL only when another claim created it this instant: none to take yet).
// Refilled in the same statement that reads it, so no time between the read and the debit
// is lost to the refill.
inline constexpr Statement kTakeTokens{"outbox_take_tokens", R"SQL(
WITH created AS (
    INSERT INTO rate_buckets (namespace, activity_type, tokens, refilled_at)
    VALUES ($1, $2, $4, clock_timestamp()) ON CONFLICT DO NOTHING RETURNING tokens),
refilled AS (
    UPDATE rate_buckets b
    SET tokens = least($4::float8, b.tokens + $3::float8 * greatest(0::float8,
                       extract(epoch FROM clock_timestamp() - b.refilled_at)::float8)),
        refilled_at = clock_timestamp()
    WHERE b.namespace = $1 AND b.activity_type = $2 RETURNING b.tokens)
SELECT coalesce((SELECT tokens FROM created), (SELECT tokens FROM refilled))::float8)SQL"};
// Takes $3 tokens from the bucket kTakeTokens locked.
inline constexpr Statement kSpendTokens{"outbox_spend_tokens",
    "UPDATE rate_buckets SET tokens = greatest(0, tokens - $3::float8)"
    " WHERE namespace = $1 AND activity_type = $2"};

// Claims and re-arms read a LIMIT off an ordered partial index. The planner can
// underestimate how many rows pass the filters and read the whole backlog and sort it
// instead; on the store's connections a sort is made a last resort. Set once per
// connection, so that a claim is one statement in one round trip.
// JIT is off too: short statements over partial indexes never gain what compiling costs
// (~30 ms), and a claim's cost estimate can pass jit_above_cost with a large backlog.
inline constexpr std::array<std::string_view, 2> kSessionSetup{"SET enable_sort = off",
                                                               "SET jit = off"};
// The same for a connection that only claims (OutboxSession::Commits::relaxed). Claim tokens
// come from a sequence, and a crash loses whatever its unflushed WAL handed out: the same
// tokens would be handed out again, and an answer to a lost claim would pass the fence of
// a new claim of the same row. So every new connection first moves the sequence past
// anything a lost WAL tail can hold, durably (txid_current() makes the commit wait for the
// flush), before its own commits stop waiting.
inline constexpr std::array<std::string_view, 4> kRelaxedSessionSetup{
    "SET enable_sort = off",
    "SET jit = off",
    "SELECT setval('outbox_claim_token_seq', nextval('outbox_claim_token_seq') + 1000000),"
    " txid_current()",
    "SET synchronous_commit = off"};

inline constexpr std::array kOutboxStatements{
    kAppend, kClaimScoped, kClaimScopedAfter, kClaimRoutes, kRoutesWithDueRows, kRecordOutcomes,
    kRecordOutcomesLettingGo,
    kRearmStaleClaimed, kWriteLeases, kRearmOrphaned, kReleaseClaimsAfter, kCancelWorkflow,
    kCountClaimedByNamespace, kCountLiveByNamespace, kFind, kWorkflowRows, kPauseWorkflow, kResumeWorkflow,
    kListDeadLetters, kRequeueDeadLetter, kRequeueDeadLetters, kPurgeDeadLetters, kDeleteFinished, kPutNamespace, kGetNamespace,
    kListNamespaces, kSettleCancelled, kPutHttpTarget, kGetHttpTarget, kListHttpTargets,
    kDeleteHttpTarget, kReportHttpTargets, kScheduleNow, kPutSchedule, kGetSchedule,
    kListSchedules, kDeleteSchedule, kDueSchedules, kStageFirings, kAdvanceSchedule, kRefuseSchedule, kClaimOrdered, kClaimOrderedAfter, kLetGoWaiting, kReleaseUnordered,
    kCountBlockedWorkflows, kLockActivity, kCountClaimedOfType, kTakeTokens, kSpendTokens,
    kAllWorkflowRows, kWorkflowFlags, kNamespaceCounts,
};

// clang-format on

}  // namespace outboxd::store::sql
