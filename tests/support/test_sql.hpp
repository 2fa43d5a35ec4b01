#pragma once

// Statements only tests run (the node never does): claims of any route, counts and probes
// that check what the node's own statements did. On the store's conventions and macros.

#include <array>

#include "store/claim_sql.hpp"
#include "store/row_columns.hpp"

namespace outboxd::test::sql {

using store::Statement;

// clang-format off

inline constexpr Statement kClaim{"outbox_claim",
    "WITH " OUTBOXD_CLAIM_TOKEN
    " picked AS (SELECT o.id FROM outbox o WHERE " OUTBOXD_CLAIMABLE
    "   ORDER BY o.visible_after, o.id LIMIT $3 FOR UPDATE OF o SKIP LOCKED) "
    OUTBOXD_CLAIM_UPDATE};

// $1 ranges, $2 age in ms, $3 limit.
inline constexpr Statement kListStaleClaimed{"outbox_list_stale_claimed",
    "SELECT " OUTBOXD_ROW_COLUMNS " FROM outbox o"
    " WHERE o.status = 'claimed' AND o.claimed_at < now() - $2 * interval '1 millisecond'"
    "   AND o.shard <@ $1::int4multirange"
    " ORDER BY o.claimed_at, o.id LIMIT $3"};

inline constexpr Statement kListUnsettledWorkflows{"outbox_list_unsettled_workflows", R"SQL(
SELECT DISTINCT workflow_id FROM outbox
WHERE status IN ('pending', 'claimed') AND shard <@ $1::int4multirange
ORDER BY workflow_id)SQL"};

inline constexpr Statement kCountInflight{"outbox_count_inflight", R"SQL(
SELECT count(*) FROM outbox
WHERE namespace = $1 AND status IN ('pending', 'claimed') AND shard <@ $2::int4multirange)SQL"};

inline constexpr Statement kCountClaimed{"outbox_count_claimed", R"SQL(
SELECT count(*) FROM outbox
WHERE namespace = $1 AND status = 'claimed' AND shard <@ $2::int4multirange)SQL"};

inline constexpr Statement kPendingRoutes{"outbox_pending_routes",
    "SELECT DISTINCT o.namespace, o.task_queue, o.node FROM outbox o"
    " WHERE o.status = 'pending' AND o.visible_after <= now() AND o.shard <@ $1::int4multirange"
    OUTBOXD_NOT_HELD " ORDER BY 1, 2, 3"};

inline constexpr Statement kIsPaused{"outbox_is_paused",
    "SELECT 1 FROM paused_workflows WHERE workflow_id = $1"};

inline constexpr std::array kTestStatements{
    kClaim, kListStaleClaimed, kListUnsettledWorkflows, kCountInflight, kCountClaimed,
    kPendingRoutes, kIsPaused,
};

// clang-format on

}  // namespace outboxd::test::sql
