#pragma once

// The columns an outbox row is read back with, listed once: the same list makes the SELECT's
// text (OUTBOXD_ROW_COLUMNS, OUTBOXD_CLAIMED_COLUMNS) and the positions the decoder reads
// (row_column::…, claimed_column::…), so the two cannot drift apart. Internal to src/store
// (and test support).

#include "pg_codec.hpp"

// The SQL is laid out by hand, as SQL reads; clang-format would reflow it as C++.
// clang-format off

// What a task is, after `o.id` (column 0): columns 1..9 of both lists.
#define OUTBOXD_TASK_COLUMN_LIST(X)                                                    \
    X(dispatch_key, "o.dispatch_key")                                                  \
    X(workflow_id, "o.workflow_id")                                                    \
    X(ordinal, "o.ordinal")                                                            \
    X(run_id, "o.run_id")                                                              \
    X(namespace_name, "o.namespace")                                                   \
    X(task_queue, "o.task_queue")                                                      \
    X(node, "o.node")                                                                  \
    X(activity_type, "o.activity_type")                                                \
    X(input, "o.input::text")

// The rest of a whole row (an OutboxRow: the API, re-arms).
#define OUTBOXD_ROW_MORE_COLUMN_LIST(X)                                                \
    X(status, "o.status")                                                              \
    X(attempt, "o.attempt")                                                            \
    X(visible_after_us, OUTBOXD_SQL_MICROS("o.visible_after"))                          \
    X(claimed_at_us, OUTBOXD_SQL_MICROS("o.claimed_at"))                                \
    X(claimed_by, "o.claimed_by")                                                      \
    X(claim_token, "o.claim_token")                                                    \
    X(last_error, "o.last_error")                                                      \
    X(created_at_us, OUTBOXD_SQL_MICROS("o.created_at"))                                \
    X(finished_at_us, OUTBOXD_SQL_MICROS("o.finished_at"))                              \
    X(shard, "o.shard")                                                                \
    X(priority, "o.priority")                                                          \
    X(waiting, "o.waiting")                                                            \
    X(result, "o.result::text")                                                        \
    X(traceparent, "o.traceparent")                                                    \
    X(heartbeat_at_us, OUTBOXD_SQL_MICROS("o.heartbeat_at"))                            \
    X(progress, "o.progress::text")                                                    \
    X(deliveries, "o.deliveries")

// The rest of a claimed row: only what a task needs. Every row of one claim shares its
// instant and token, computed once in the claim's `token` CTE.
#define OUTBOXD_CLAIMED_MORE_COLUMN_LIST(X)                                            \
    X(attempt, "o.attempt")                                                            \
    X(visible_after_us, OUTBOXD_SQL_MICROS("o.visible_after"))                          \
    X(claim_token, "o.claim_token")                                                    \
    X(shard, "o.shard")                                                                \
    X(claimed_at_us, "(SELECT at FROM token)")                                         \
    X(priority, "o.priority")                                                          \
    X(traceparent, "o.traceparent")                                                    \
    X(deliveries, "o.deliveries")

#define OUTBOXD_SQL_NEXT_COLUMN(name, expression) ", " expression
#define OUTBOXD_ENUM_COLUMN(name, expression) name,

#define OUTBOXD_ROW_COLUMNS                                                            \
    "o.id" OUTBOXD_TASK_COLUMN_LIST(OUTBOXD_SQL_NEXT_COLUMN)                            \
    OUTBOXD_ROW_MORE_COLUMN_LIST(OUTBOXD_SQL_NEXT_COLUMN)
#define OUTBOXD_CLAIMED_COLUMNS                                                        \
    "o.id" OUTBOXD_TASK_COLUMN_LIST(OUTBOXD_SQL_NEXT_COLUMN)                            \
    OUTBOXD_CLAIMED_MORE_COLUMN_LIST(OUTBOXD_SQL_NEXT_COLUMN)

// clang-format on

namespace outboxd::store {

// Positions in OUTBOXD_ROW_COLUMNS; `count` is the first position after them.
namespace row_column {
enum : int {
    id,
    OUTBOXD_TASK_COLUMN_LIST(OUTBOXD_ENUM_COLUMN) OUTBOXD_ROW_MORE_COLUMN_LIST(OUTBOXD_ENUM_COLUMN)
        count
};
}  // namespace row_column

// Positions in OUTBOXD_CLAIMED_COLUMNS; a claim of several routes returns each row's route
// ordinal at `count`.
namespace claimed_column {
enum : int {
    id,
    OUTBOXD_TASK_COLUMN_LIST(OUTBOXD_ENUM_COLUMN)
        OUTBOXD_CLAIMED_MORE_COLUMN_LIST(OUTBOXD_ENUM_COLUMN) count
};
}  // namespace claimed_column

static_assert(static_cast<int>(row_column::input) == static_cast<int>(claimed_column::input),
              "the task's columns come first in both lists");

}  // namespace outboxd::store
