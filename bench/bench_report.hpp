#pragma once

// Everything one benchmark run measured, and its two renderings: a table for people
// (stdout) and one JSON object for tools (the last line of stdout, optionally a file).

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench_context.hpp"
#include "claim_loop.hpp"
#include "client_workers_scenario.hpp"
#include "controls_scenario.hpp"
#include "e2e_scenario.hpp"
#include "heartbeat_scenario.hpp"
#include "history_scenario.hpp"
#include "latency_scenario.hpp"
#include "quiet_tenant_scenario.hpp"
#include "tenants_scenario.hpp"
#include "wake_scenario.hpp"
#include "weighted_scenario.hpp"

namespace outboxd::bench {

struct MachineInfo {
    int cpus = 0;
    std::string cpu_model;
    double memory_gib = 0;
    std::string postgres_version;
    std::string postgres_settings;
    double load_before = 0;  // 1-minute load average when the run started
};

struct BenchReport {
    MachineInfo machine;
    std::vector<ClaimLoopResult> floor_runs;
    std::vector<std::pair<ClaimLoopConfig, ClaimLoopResult>> grid;
    std::vector<E2eResult> e2e_1node_runs;
    std::vector<E2eResult> e2e_3node_runs;
    std::optional<LatencyResult> latency;
    std::optional<WakeResult> wake;
    std::optional<HistoryResult> history;
    std::vector<E2eResult> idle_routes_runs;  // run i over e2e_1node_runs[i]; median of those
    std::vector<TenantsResult> tenants_runs;  // run i over one_route_volume_runs[i]
    // 1 route, as the e2e 1-node run, with as many rows as a tenants run: the table the
    // tenants drain is three times the e2e one, and claims slow as it grows.
    std::vector<E2eResult> one_route_volume_runs;
    std::optional<WeightedResult> weighted;
    std::optional<QuietTenantResult> quiet_tenant;
    std::optional<HeartbeatResult> heartbeats;
    // HTTP push: each run's drain into an HTTP target and the WebSocket drain of the same
    // rows beside it; the latency at a steady rate.
    std::vector<E2eResult> http_push_runs;
    std::vector<E2eResult> http_ws_runs;
    // results: the e2e run with workers answering results, and without, paired.
    std::vector<E2eResult> results_kept_runs;
    std::vector<E2eResult> results_plain_runs;
    std::optional<LatencyResult> http_latency;
    std::optional<ControlsResult> controls;
    // clients: the TypeScript and Python clients' drains and Graphile Worker's, each run.
    std::vector<ClientWorkersResult> client_runs;
    double total_seconds = 0;
    double load_after = 0;  // 1-minute load average when it ended
};

[[nodiscard]] double load_average();

[[nodiscard]] MachineInfo read_machine_info(const BenchDatabases& databases);

[[nodiscard]] std::string render_table(const BenchSettings& settings, const BenchReport& report);
[[nodiscard]] nlohmann::json render_json(const BenchSettings& settings, const BenchReport& report);

}  // namespace outboxd::bench
