#pragma once

// The runs of the delivery controls scenario (docs/benchmarks.md, "Delivery controls"), each
// through real nodes and no-op outboxd-worker processes:
// - ordered: settings.ordered_workflows workflows × 10 rows (staged interleaved, as events
//   of many aggregates arrive: ordinal-major), drained by 1 node once unordered and once with
//   "ordering": "workflow"; ordered_ratio = ordered ÷ unordered rows/s. Then one workflow of
//   settings.serial_rows rows, ordered: ordered_serial_rows_per_s (each row waits for its
//   predecessor's outcome write).
// - rate limit: 3 nodes, "rate_limit": {"per_second": 200, "burst": 20} on a namespace with a
//   backlog, settings.rate_seconds measured after the burst; rate_limit_err = |achieved −
//   200| ÷ 200, the worst of the whole span and its halves; and the largest count in any 1 s
//   window over the bound 200 + 20.
// - priority: settings.priority_backlog rows of priority 0 draining through 1 node to an
//   in-process SDK worker (credit 512); meanwhile 20 rows a second of priority 50 on the same
//   route, committed one per transaction; latency = task received − COMMIT returned (steady clock,
//   this process). priority_p99_ms.
// - concurrency: 3 nodes, "activities": {"noop": {"max_in_flight": 8}}, a backlog drained
//   while a checker counts the claimed rows of the type as often as it can:
//   concurrency_limit_max_seen (must not exceed 8).

#include <cstdint>
#include <string>

#include "bench_context.hpp"

namespace outboxd::bench {

struct OrderedResult {
    std::int64_t rows = 0;  // per run
    double unordered_rows_per_s = 0;
    double ordered_rows_per_s = 0;
    double ratio = 0;
    std::int64_t serial_rows = 0;
    double serial_rows_per_s = 0;
    bool complete = true;  // every run drained before its time was up
};

struct RateLimitResult {
    int nodes = 0;
    double per_second = 0;
    int burst = 0;
    double seconds = 0;           // measured span, after the burst
    std::int64_t dispatches = 0;  // in the span
    double achieved = 0;          // per second, whole span
    double err = 0;               // worst relative error: the span and its halves
    double window_max_ratio = 0;  // most dispatches in a 1 s window ÷ (rate + burst)
};

struct PriorityResult {
    std::int64_t backlog = 0;       // priority-0 rows staged ahead
    std::int64_t rows = 0;          // priority rows committed
    std::int64_t missing = 0;       // committed, not received in time
    std::int64_t backlog_left = 0;  // priority-0 rows not done when the last was committed
    double p50_ms = 0;
    double p99_ms = 0;
    double max_ms = 0;
};

struct ConcurrencyResult {
    int nodes = 0;
    int limit = 0;
    std::int64_t rows = 0;
    std::int64_t max_seen = 0;
    std::int64_t samples = 0;
    double rows_per_s = 0;
};

struct ControlsResult {
    OrderedResult ordered;
    RateLimitResult rate;
    PriorityResult priority;
    ConcurrencyResult concurrency;
};

ControlsResult run_controls(const BenchContext& context);

}  // namespace outboxd::bench
