#pragma once

// What heartbeats cost the database (README, "Task policy and heartbeats"): 10,000 tasks
// outstanding on one node at once, each heartbeating once a second from an in-process SDK
// worker (activity "long", heartbeat_timeout_ms 5000, so each heartbeat matters), for
// settings.heartbeat_seconds. The node batches what the heartbeats ask of the database;
// heartbeat_statements_per_s is the rate of its lease statements over the window
// (outboxd_lease_statements_total), beside the heartbeats it took and the rows written.
// Then every task completes and the scenario checks all are done, each claimed once.

#include <cstdint>

#include "bench_context.hpp"

namespace outboxd::bench {

struct HeartbeatResult {
    std::int64_t tasks = 0;
    double seconds = 0;             // the measured window
    double heartbeats_per_s = 0;    // frames the node took
    double statements_per_s = 0;    // lease statements it ran (the key)
    double rows_written_per_s = 0;  // rows those statements wrote
    std::int64_t redelivered = 0;   // rows claimed more than once (must be 0)
};

HeartbeatResult run_heartbeats(const BenchContext& context);

}  // namespace outboxd::bench
