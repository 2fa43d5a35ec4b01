#pragma once

// What every scenario needs: the settings, the cluster's databases, CPU accounting and a
// progress log (stderr; stdout carries only the report).

#include <chrono>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "bench_database.hpp"
#include "node_fleet.hpp"
#include "proc_stat.hpp"

namespace outboxd::bench {

struct BenchSettings {
    bool quick = false;
    bool smoke = false;        // CI's run: quick, smaller still (implies quick)
    std::string database_url;  // admin URI of the bench cluster
    std::string pg_data_dir;   // its data directory, for CPU accounting (optional)
    // A second instance (the databases scenario): its admin URI and data directory.
    std::string second_database_url;
    std::string second_pg_data_dir;
    std::string bin_dir;
    std::string work_dir;
    std::int64_t rows = 200'000;       // floor and e2e
    std::int64_t grid_rows = 100'000;  // each sql_limit grid cell
    std::int64_t history_rows = 5'000'000;
    int repeat = 3;  // floor and e2e runs; the median is reported
    int node_batch_size = 1024;
    std::vector<std::pair<std::string, std::string>> node_env;
    int worker_processes = 2;
    int worker_max_in_flight = 1024;
    double e2e_max_seconds = 45;  // a slower run stops there: rows/s over rows done
    double latency_rate = 1000;   // rows/s
    double latency_seconds = 10;  // measured, after the warm-up
    double latency_warmup_seconds = 1;
    int latency_stagers = 16;   // connections; enough to keep the rate at ~10 ms commits
    double wake_seconds = 2.5;  // per phase
    int wake_writers = 8;
    int history_repeat = 2;  // turns of the three history conditions
    int wake_rounds = 8;     // each round: off, on (then on, off: ABBA)
    double snapshot_max_seconds = 60;
    // Rows staged for the old-snapshot runs: enough to keep claiming under the snapshot for
    // most of snapshot_max_seconds (0: `rows`).
    std::int64_t snapshot_rows = 1'000'000;
    // Routes and tenants (docs/benchmarks.md, "Many routes and tenants").
    int idle_routes = 1000;              // connected namespaces without rows beside the busy one
    std::int64_t tenant_rows = 600'000;  // over tenant_namespaces × tenant_queues routes
    int tenant_namespaces = 100;
    int tenant_queues = 3;
    double fairness_window_seconds = 5;
    std::int64_t weighted_rows = 200'000;      // per weighted namespace
    std::int64_t quiet_busy_rows = 2'200'000;  // the busy tenant's backlog
    double quiet_seconds = 30;                 // one quiet row a second for this long
    // HTTP push (docs/benchmarks.md, "HTTP push").
    std::int64_t http_rows = 50'000;  // per throughput run, and the WebSocket run beside it
    int http_max_in_flight = 512;     // the target's bound: concurrent requests
    // Broker targets (docs/benchmarks.md, "Broker targets").
    std::int64_t broker_rows = 50'000;  // per NATS and AMQP run, and the WebSocket run beside them
    int broker_max_in_flight = 512;     // each broker target's bound: unconfirmed messages
    // Delivery controls (docs/benchmarks.md, "Delivery controls").
    std::int64_t ordered_workflows = 10'000;  // × 10 rows, ordered and unordered
    std::int64_t serial_rows = 5'000;         // one ordered workflow
    double rate_seconds = 10;                 // measured span of the rate limit
    std::int64_t priority_backlog = 1'000'000;
    std::int64_t priority_rows = 100;  // 20 a second
    std::int64_t limit_rows = 10'000;  // concurrency limit run
    // Task life (docs/benchmarks.md, "Results and heartbeats").
    double heartbeat_seconds = 20;  // 10,000 tasks heartbeating once a second, measured
    std::vector<std::string> only;  // scenarios to run; empty: all
};

// How long a changed namespace setting may take to reach every node's claim path: the
// nodes' OUTBOXD_QUOTA_CACHE_TTL_MS (from --node-env, else its default).
[[nodiscard]] inline std::chrono::milliseconds settings_ttl(const BenchSettings& settings) {
    for (const auto& [key, value] : settings.node_env) {
        if (key == "OUTBOXD_QUOTA_CACHE_TTL_MS")
            return std::chrono::milliseconds{std::stoll(value)};
    }
    return std::chrono::milliseconds{1000};
}
inline constexpr std::chrono::milliseconds kSettingsMargin{500};

struct BenchContext {
    const BenchSettings& settings;
    BenchDatabases& databases;
    const PgClusterCpu& pg_cpu;

    [[nodiscard]] FleetSettings fleet(const std::string& database_url) const {
        return {settings.bin_dir, settings.work_dir, database_url, settings.node_batch_size,
                settings.node_env};
    }
};

}  // namespace outboxd::bench
