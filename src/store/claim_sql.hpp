#pragma once

// The claims lane's statements (ClaimStore): claims of one route or of many, the probe of
// which routes have due rows, the claimed counts, the release of claims a failed round may
// have left unseen, and the limits around a limited claim. The names key the prepared
// statements and the store's error messages. Internal to src/store.

#include <array>

#include "pg_codec.hpp"
#include "pg_session.hpp"
#include "row_columns.hpp"
#include "shared_sql.hpp"

namespace outboxd::store::sql {

// The SQL is laid out by hand, as SQL reads; clang-format would reflow it as C++.
// clang-format off

// Paused and cancelled workflows are excluded inside the claim, before the LIMIT, so held
// rows never take a slot of it.
#define OUTBOXD_NOT_HELD                                                                 \
    " AND NOT EXISTS (SELECT 1 FROM paused_workflows p WHERE p.workflow_id = o.workflow_id)" \
    " AND NOT EXISTS (SELECT 1 FROM cancelled_workflows c WHERE c.workflow_id = o.workflow_id)"

// A claim checks the owner of each candidate row's shard by primary key, where aggregating
// every lease of the range costs ~0.5 ms per statement whatever it claims. A scalar
// subquery, not EXISTS: the planner turns an EXISTS into a join and, for a large claim,
// may pick a nested loop comparing every candidate with every lease (EXPLAIN ANALYZE of a
// 1,024-row claim of a freshly analysed 300k-row table, one owner of all 1,024 shards:
// 530k comparisons, ~57 of ~100 ms), where a probe per row costs ~2 µs.
// $1 incarnation, $2 ranges.
#define OUTBOXD_CLAIMABLE                                                              \
    "o.status = 'pending' AND NOT o.waiting AND o.visible_after <= now()"               \
    " AND o.shard <@ $2::int4multirange"                                                 \
    " AND (SELECT l.owner = $1 FROM shard_leases l WHERE l.shard = o.shard)"          \
    " AND " OUTBOXD_OWN_LEASE OUTBOXD_NOT_HELD

#define OUTBOXD_CLAIM_TOKEN                                                            \
    " token AS MATERIALIZED (SELECT nextval('outbox_claim_token_seq') AS value, "     \
    OUTBOXD_SQL_MICROS("now()") " AS at),"

// A claim is a delivery (a release of a claim that reached nobody takes it back, in the
// outcome write). Saturates at the largest int, like attempt; a row staged by plain SQL with a
// negative count starts from 0.
#define OUTBOXD_COUNT_DELIVERY "deliveries = least(greatest(o.deliveries, 0), 2147483646) + 1"

// `id = ANY(ARRAY(…))` makes the update a primary-key probe per picked row; a join on
// `picked` lets the planner hash the whole table when it underestimates the pick. A claim
// returns OUTBOXD_CLAIMED_COLUMNS (row_columns.hpp): only what a task needs.
#define OUTBOXD_CLAIM_UPDATE_SETTING(also)                                              \
    "UPDATE outbox o SET status = 'claimed', claimed_at = now(), claimed_by = $1,"    \
    " claim_token = (SELECT value FROM token), " OUTBOXD_COUNT_DELIVERY also          \
    " WHERE o.id = ANY (ARRAY(SELECT id FROM picked)) RETURNING " OUTBOXD_CLAIMED_COLUMNS
#define OUTBOXD_CLAIM_UPDATE OUTBOXD_CLAIM_UPDATE_SETTING("")

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
#define OUTBOXD_CLAIM_SCOPED(after) OUTBOXD_CLAIM_SCOPED_ON(OUTBOXD_ONE_ROUTE, after)
#define OUTBOXD_CLAIM_SCOPED_ON(route, after)                                            \
    "WITH " OUTBOXD_CLAIM_TOKEN                                                         \
    " prio AS MATERIALIZED (SELECT o.id FROM outbox o WHERE " OUTBOXD_PRIORITY_GATE      \
    "   AND " OUTBOXD_CLAIMABLE route " AND o.priority > 0"                              \
    "   ORDER BY o.namespace, o.task_queue, o.priority DESC, o.visible_after, o.id"      \
    "   LIMIT $7 FOR UPDATE OF o SKIP LOCKED),"                                          \
    " rest AS MATERIALIZED (SELECT o.id FROM outbox o WHERE NOT EXISTS (SELECT 1 FROM prio)" \
    "   AND " OUTBOXD_CLAIMABLE route after                                               \
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
#define OUTBOXD_CLAIM_ORDERED(after) OUTBOXD_CLAIM_ORDERED_ON(OUTBOXD_ONE_ROUTE, after)
#define OUTBOXD_CLAIM_ORDERED_ON(route, after)                                           \
    "WITH " OUTBOXD_CLAIM_TOKEN                                                         \
    " cand AS MATERIALIZED (SELECT o.id, NOT " OUTBOXD_HAS_EARLIER("o", "$9") " AS head" \
    "   FROM outbox o WHERE " OUTBOXD_CLAIMABLE route after                              \
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

// A route that serves any activity type but those claimed apart under their own limits (a
// namespace's per-type limits, when a target takes every type): the scoped and ordered
// claims, with the types to leave out as the last parameter ($11, $12) and the claim
// position ($9/$10, $10/$11) NULL for a claim from the front. Rare: one statement each for
// both (a generic plan's position bound then starts from the front).
#define OUTBOXD_POSITION_OR_FRONT(us, id)                                                \
    " AND (o.visible_after, o.id) > (coalesce(" OUTBOXD_SQL_INSTANT(us) ","             \
    " '-infinity'::timestamptz), coalesce(" id ", 0))"
inline constexpr Statement kClaimScopedExcluding{"outbox_claim_scoped_excluding",
    OUTBOXD_CLAIM_SCOPED_ON(OUTBOXD_ONE_ROUTE " AND o.activity_type <> ALL ($11::text[])",
                            OUTBOXD_POSITION_OR_FRONT("$9::bigint", "$10::bigint")),
    Plan::generic};
inline constexpr Statement kClaimOrderedExcluding{"outbox_claim_ordered_excluding",
    OUTBOXD_CLAIM_ORDERED_ON(OUTBOXD_ONE_ROUTE " AND o.activity_type <> ALL ($12::text[])",
                             OUTBOXD_POSITION_OR_FRONT("$10::bigint", "$11::bigint")),
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
    " claim_token = (SELECT value FROM token), " OUTBOXD_COUNT_DELIVERY
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

// $1 owner, $2 token: the claimer's own claims made after its last known claim (a claim
// whose statement failed may have committed all the same). Attempt preserved; the delivery
// such a claim counted is taken back: it reached nobody.
inline constexpr Statement kReleaseClaimsAfter{"outbox_release_claims_after",
    "UPDATE outbox o SET status = 'pending', visible_after = least(o.visible_after, now()), "
    " deliveries = greatest(o.deliveries - 1, 0), "
    OUTBOXD_CLEAR_CLAIM
    " WHERE o.status = 'claimed' AND o.claimed_by = $1 AND o.claim_token > $2"
    "   AND o.claim_token <> ALL ($3::bigint[])"};

inline constexpr Statement kCountClaimedByNamespace{"outbox_count_claimed_by_namespace", R"SQL(
SELECT namespace, count(*) FROM outbox
WHERE status = 'claimed' AND namespace = ANY ($1::text[]) AND shard <@ $2::int4multirange
GROUP BY namespace)SQL"};

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

// Every statement a claims lane prepares.
inline constexpr std::array kClaimStatements{
    kClaimScoped, kClaimScopedAfter, kClaimOrdered, kClaimOrderedAfter, kClaimScopedExcluding,
    kClaimOrderedExcluding, kClaimRoutes,
    kRoutesWithDueRows, kReleaseClaimsAfter, kCountClaimedByNamespace, kLockActivity,
    kCountClaimedOfType, kTakeTokens, kSpendTokens};

// clang-format on

}  // namespace outboxd::store::sql
