#pragma once

// Claim cost against history: the SQL floor loop (one client, claim 100 + complete) over
// the same N freshly staged rows
//   (a) on a clean table,
//   (b) after `history_rows` finished rows (done an hour ago, within retention) were
//       inserted and the table vacuumed,
//   (c) as (b), with a concurrent REPEATABLE READ transaction that took its snapshot
//       just before the loop started and holds it for the whole loop (at most
//       `snapshot_max_seconds`; the loop stops there and its rate is over the rows done).
// The history is generated once into a template database and copied for (b) and (c).

#include "bench_context.hpp"
#include "claim_loop.hpp"

namespace outboxd::bench {

struct HistoryResult {
    std::int64_t history_rows = 0;
    double history_generate_seconds = 0;
    ClaimLoopResult clean;
    ClaimLoopResult history;
    ClaimLoopResult old_snapshot;
};

HistoryResult run_history(const BenchContext& context);

}  // namespace outboxd::bench
