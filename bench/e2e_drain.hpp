#pragma once

// The end-to-end drain the scenarios share: N staged rows drained by outboxd node
// process(es) pushing to no-op outboxd-worker processes over WebSocket.
//
// The clock starts when the workers are launched (the nodes are up and own their shards
// by then, and claim nothing without worker credit) and stops at the last row's
// finished_at, read from the database once the nodes' done counters (GET /metrics, every
// 100 ms) reach the staged count and no row is pending or claimed, so the poll interval
// does not round the time up, and polling costs the database nothing while it runs. A run still
// going after settings.e2e_max_seconds stops there and reports the rows done by then over that time
// (complete = false), which bounds the benchmark's duration whatever outboxd's speed.
// Node, worker and PostgreSQL CPU are sampled over the same window.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "bench_context.hpp"

namespace outboxd::bench {

struct E2eResult {
    int nodes = 0;
    std::int64_t rows = 0;
    double seconds = 0;
    std::int64_t staged = 0;
    bool complete = true;  // every staged row done within e2e_max_seconds
    double node_cpu_s = 0;
    double worker_cpu_s = 0;
    double pg_cpu_s = 0;
    double host_busy = 0;  // fraction of the machine's CPU busy during the run
    std::int64_t wal_bytes = 0;
    double foreign_cpu = 0;         // machine share used by other processes (see ClaimLoopResult)
    std::int64_t claim_rounds = 0;  // the nodes' claim rounds in the window, and their time
    double claim_seconds = 0;

    [[nodiscard]] double rows_per_s() const { return seconds > 0 ? rows / seconds : 0.0; }
};

// `rows`: how many to stage and drain (default: settings.rows).
E2eResult run_e2e(const BenchContext& context, int nodes, const std::string& tag,
                  std::optional<std::int64_t> rows = std::nullopt);
// The same with the default workers answering results of `result_bytes` each.
E2eResult run_e2e_with_results(const BenchContext& context, const std::string& tag,
                               std::size_t result_bytes);

// The measured part of run_e2e on a database the caller prepared (rows staged and
// settled) and keeps: `nodes` node(s), then the workers and the clock. `with_nodes` runs
// once the nodes are up and balanced, before anything is sampled (idle workers connect
// there); `at_start` just before the clock starts (the history scenario opens its old
// snapshot there); `max_seconds` caps the run (default: settings.e2e_max_seconds).
// `workers` are the processes whose launch starts the clock (default:
// settings.worker_processes no-op workers of namespace `default`).
// `consume`, when set, replaces the worker processes: it starts whatever takes the rows
// (an HTTP push target) when the clock starts, and returns the CPU seconds of what it runs.
// The no-op workers of namespace `default` a drain starts unless told otherwise.
[[nodiscard]] WorkerGroup default_workers(const BenchSettings& settings);

struct DrainOptions {
    std::function<void(NodeFleet&)> with_nodes;
    std::function<void()> at_start;
    std::optional<double> max_seconds;
    std::vector<WorkerGroup> workers;
    std::function<std::function<double()>(NodeFleet&)> consume;
};
E2eResult drain_e2e(const BenchContext& context, const std::string& url, int nodes,
                    const std::string& tag, const DrainOptions& options = {});

}  // namespace outboxd::bench
