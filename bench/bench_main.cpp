// outboxd-bench: the benchmark driver behind scripts/bench (issue 7, docs/benchmarks.md).
//
// Runs against a PostgreSQL cluster it is given (scripts/bench starts a durable one),
// creating a fresh database per scenario, and starts outboxd and outboxd-worker processes
// from --bin-dir. Progress goes to stderr; stdout gets a table and, as its last line, one
// JSON object. Exit code 0 when every scenario ran, 1 when one failed (the report then has
// what ran and an "error" field), 2 for bad flags.

#include <algorithm>
#include <chrono>
#include <fstream>
#include <iostream>
#include <set>
#include <stdexcept>
#include <string>

#include <CLI/CLI.hpp>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "bench_context.hpp"
#include "bench_report.hpp"
#include "child_process.hpp"
#include "claim_loop.hpp"
#include "client_workers_scenario.hpp"
#include "controls_scenario.hpp"
#include "e2e_scenario.hpp"
#include "heartbeat_scenario.hpp"
#include "history_scenario.hpp"
#include "http_push_scenario.hpp"
#include "idle_routes_scenario.hpp"
#include "latency_scenario.hpp"
#include "quiet_tenant_scenario.hpp"
#include "results_report.hpp"
#include "tenants_scenario.hpp"
#include "wake_scenario.hpp"
#include "weighted_scenario.hpp"

namespace {

using namespace outboxd::bench;

const std::set<std::string> kScenarios{"floor",    "limit",        "e2e",         "latency",
                                       "wake",     "history",      "idle_routes", "tenants",
                                       "weighted", "quiet_tenant", "http_push",   "controls",
                                       "results",  "heartbeats",   "clients"};

struct CommandLine {
    BenchSettings settings;
    std::string json_file;
    std::string pid_file;
};

std::vector<ClaimLoopConfig> grid_configs(bool quick) {
    std::vector<ClaimLoopConfig> configs;
    if (quick) {
        configs.push_back({100, 4, Finish::complete, std::nullopt});
        configs.push_back({1000, 1, Finish::complete, std::nullopt});
        configs.push_back({1000, 2, Finish::complete, std::nullopt});
        configs.push_back({1000, 4, Finish::complete, std::nullopt});
        configs.push_back({1000, 4, Finish::remove, std::nullopt});
        return configs;
    }
    for (const int batch : {100, 500, 1000}) {
        for (const int clients : {1, 2, 4}) {
            configs.push_back({batch, clients, Finish::complete, std::nullopt});
        }
    }
    // Deleting instead of marking done: only with the largest batch, where it can win.
    for (const int clients : {1, 2, 4})
        configs.push_back({1000, clients, Finish::remove, std::nullopt});
    return configs;
}

// Parses argv; quick mode changes the defaults of every size option not given explicitly.
std::optional<int> parse(int argc, char** argv, CommandLine& command) {
    CLI::App app{"outboxd-bench: benchmark driver (run it through scripts/bench)"};
    auto& s = command.settings;
    std::vector<std::string> node_env;
    app.add_option("--database-url", s.database_url,
                   "postgresql:// URI of a superuser on the bench cluster")
        ->required();
    app.add_option("--pg-data", s.pg_data_dir, "the cluster's data directory (for its CPU time)");
    app.add_option("--bin-dir", s.bin_dir, "directory holding outboxd and outboxd-worker")
        ->required();
    app.add_option("--work-dir", s.work_dir, "logs of the processes it starts")->required();
    app.add_flag("--quick", s.quick, "the CI-sized run (< 4 minutes)");
    app.add_flag("--smoke", s.smoke,
                 "CI's check that every scenario runs: --quick, smaller still (about half "
                 "its time); its numbers mean little");
    auto* rows =
        app.add_option("--rows", s.rows, "rows per floor and e2e run (200000; quick 50000)");
    auto* grid_rows =
        app.add_option("--grid-rows", s.grid_rows, "rows per sql_limit cell (100000; quick 25000)");
    auto* history_rows =
        app.add_option("--history-rows", s.history_rows,
                       "finished rows of the history scenario (5000000; quick 500000)");
    auto* repeat =
        app.add_option("--repeat", s.repeat,
                       "floor, e2e, idle_routes and tenants runs, median reported (3; quick 1)")
            ->check(CLI::Range(1, 9));
    app.add_option("--node-batch-size", s.node_batch_size, "OUTBOXD_BATCH_SIZE of the nodes")
        ->capture_default_str();
    app.add_option("--node-env", node_env, "extra KEY=VALUE for every node (repeatable)");
    auto* e2e_max = app.add_option(
        "--e2e-max-seconds", s.e2e_max_seconds,
        "longest e2e run; a slower one reports the rows done by then (45; quick 30)");
    app.add_option("--workers", s.worker_processes, "outboxd-worker processes")
        ->capture_default_str();
    app.add_option("--worker-max-in-flight", s.worker_max_in_flight, "credit of each worker")
        ->capture_default_str();
    auto* latency_seconds = app.add_option("--latency-seconds", s.latency_seconds,
                                           "measured latency run (10; quick 5)");
    app.add_option("--latency-rate", s.latency_rate, "rows/s of the latency run")
        ->capture_default_str();
    app.add_option("--latency-stagers", s.latency_stagers, "staging connections of the latency run")
        ->capture_default_str()
        ->check(CLI::Range(1, 100));
    auto* wake_seconds =
        app.add_option("--wake-seconds", s.wake_seconds, "each wake phase (2.5; quick 2)");
    auto* wake_rounds =
        app.add_option("--wake-rounds", s.wake_rounds, "wake ABBA rounds (8; quick 2)");
    app.add_option("--snapshot-max-seconds", s.snapshot_max_seconds, "longest old snapshot")
        ->capture_default_str();
    auto* history_repeat = app.add_option("--history-repeat", s.history_repeat,
                                          "turns of the history conditions, pooled (2; quick 1)")
                               ->check(CLI::Range(1, 9));
    auto* snapshot_rows =
        app.add_option("--snapshot-rows", s.snapshot_rows,
                       "rows staged for the old-snapshot runs (1000000; quick: --rows)");
    app.add_option("--idle-routes", s.idle_routes, "idle namespaces beside the busy route")
        ->capture_default_str()
        ->check(CLI::Range(1, 5000));
    auto* tenant_rows =
        app.add_option("--tenant-rows", s.tenant_rows,
                       "rows of the tenants scenario, over all routes (600000; quick 90000)");
    app.add_option("--tenant-namespaces", s.tenant_namespaces, "namespaces of the tenants scenario")
        ->capture_default_str()
        ->check(CLI::Range(2, 1000));
    app.add_option("--tenant-queues", s.tenant_queues, "task queues per tenant namespace")
        ->capture_default_str()
        ->check(CLI::Range(1, 10));
    auto* fairness_window = app.add_option("--fairness-window-seconds", s.fairness_window_seconds,
                                           "window of the tenants' shares (5; quick 1)");
    auto* weighted_rows =
        app.add_option("--weighted-rows", s.weighted_rows,
                       "backlog of each weighted namespace (200000; quick 60000)");
    auto* quiet_busy_rows =
        app.add_option("--quiet-busy-rows", s.quiet_busy_rows,
                       "busy backlog beside the quiet tenant (1500000; quick 500000)");
    auto* heartbeat_seconds =
        app.add_option("--heartbeat-seconds", s.heartbeat_seconds,
                       "measured span of 10,000 tasks heartbeating (20; quick 8)");
    auto* quiet_seconds = app.add_option("--quiet-seconds", s.quiet_seconds,
                                         "quiet rows, one a second (30; quick 10)")
                              ->check(CLI::Range(1.0, 3600.0));
    auto* http_rows =
        app.add_option("--http-rows", s.http_rows,
                       "rows per HTTP push run, and the WebSocket run beside it (50000)")
            ->check(CLI::Range(std::int64_t{1}, std::int64_t{100'000'000}));
    app.add_option("--http-max-in-flight", s.http_max_in_flight,
                   "the HTTP push target's max_in_flight (512)")
        ->check(CLI::Range(1, 10'000));
    auto* ordered_workflows =
        app.add_option("--ordered-workflows", s.ordered_workflows,
                       "workflows of 10 rows of the ordered runs (10000; quick 2000)");
    auto* serial_rows = app.add_option("--serial-rows", s.serial_rows,
                                       "rows of the one-workflow ordered run (5000; quick 1000)");
    auto* rate_seconds = app.add_option("--rate-seconds", s.rate_seconds,
                                        "measured span of the rate limit run (10; quick 4)");
    auto* priority_backlog =
        app.add_option("--priority-backlog", s.priority_backlog,
                       "priority-0 rows ahead of the priority rows (1000000; quick 200000)");
    auto* limit_rows = app.add_option("--limit-rows", s.limit_rows,
                                      "rows of the concurrency limit run (10000; quick 3000)");
    app.add_option("--only", s.only,
                   "scenarios to run: floor,limit,e2e,latency,wake,history,idle_routes,tenants,"
                   "weighted,quiet_tenant,http_push,controls,results,heartbeats,clients")
        ->delimiter(',')
        ->check(CLI::IsMember(kScenarios));
    app.add_option("--json-file", command.json_file, "also write the JSON result here");
    app.add_option("--pid-file", command.pid_file, "append the pid of every child process here");
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& error) {
        return app.exit(error);
    }
    if (s.smoke) s.quick = true;
    if (s.quick) {
        if (!*rows) s.rows = 50'000;
        if (!*grid_rows) s.grid_rows = 25'000;
        if (!*history_rows) s.history_rows = 500'000;
        if (!*snapshot_rows) s.snapshot_rows = s.rows;
        if (!*history_repeat) s.history_repeat = 1;
        if (!*repeat) s.repeat = 1;
        if (!*e2e_max) s.e2e_max_seconds = 30;
        if (!*latency_seconds) s.latency_seconds = 5;
        if (!*wake_seconds) s.wake_seconds = 2;
        if (!*wake_rounds) s.wake_rounds = 2;
        if (!*tenant_rows) s.tenant_rows = 90'000;
        if (!*fairness_window) s.fairness_window_seconds = 1;
        if (!*weighted_rows) s.weighted_rows = 60'000;
        if (!*quiet_busy_rows) s.quiet_busy_rows = 500'000;
        if (!*quiet_seconds) s.quiet_seconds = 10;
        if (!*heartbeat_seconds) s.heartbeat_seconds = 8;
        if (!*ordered_workflows) s.ordered_workflows = 2'000;
        if (!*serial_rows) s.serial_rows = 1'000;
        if (!*rate_seconds) s.rate_seconds = 4;
        if (!*priority_backlog) s.priority_backlog = 200'000;
        s.priority_rows = 40;
        if (!*limit_rows) s.limit_rows = 3'000;
    }
    if (s.smoke) {
        // Every scenario still runs and reports; sizes keep each one's precondition (a backlog
        // that outlasts what is measured beside it, windows of at least a second).
        if (!*rows) s.rows = 20'000;
        if (!*grid_rows) s.grid_rows = 10'000;
        if (!*history_rows) s.history_rows = 150'000;
        if (!*snapshot_rows) s.snapshot_rows = s.rows;
        if (!*e2e_max) s.e2e_max_seconds = 20;
        if (!*latency_seconds) s.latency_seconds = 3;
        if (!*tenant_rows) s.tenant_rows = 30'000;
        if (!*weighted_rows) s.weighted_rows = 20'000;
        if (!*quiet_busy_rows) s.quiet_busy_rows = 250'000;
        if (!*quiet_seconds) s.quiet_seconds = 5;
        if (!*heartbeat_seconds) s.heartbeat_seconds = 4;
        if (!*ordered_workflows) s.ordered_workflows = 500;
        if (!*serial_rows) s.serial_rows = 300;
        if (!*rate_seconds) s.rate_seconds = 2;
        if (!*priority_backlog) s.priority_backlog = 60'000;
        if (!*limit_rows) s.limit_rows = 1'000;
        if (!*http_rows) s.http_rows = 15'000;
    }
    for (const auto& entry : node_env) {
        const auto equals = entry.find('=');
        if (equals == std::string::npos || equals == 0) {
            std::cerr << "outboxd-bench: --node-env wants KEY=VALUE, got '" << entry << "'\n";
            return 2;
        }
        s.node_env.emplace_back(entry.substr(0, equals), entry.substr(equals + 1));
    }
    return std::nullopt;
}

bool wanted(const BenchSettings& settings, const std::string& scenario) {
    return settings.only.empty() ||
           std::find(settings.only.begin(), settings.only.end(), scenario) != settings.only.end();
}

ClaimLoopResult staged_loop(const BenchContext& context, const std::string& database,
                            std::int64_t rows, const ClaimLoopConfig& config) {
    const auto url = context.databases.create_migrated(database);
    stage_pending_rows(url, rows, "sql-");
    settle(url);
    auto result = run_claim_loop(url, config, context.pg_cpu);
    context.databases.drop(database);
    if (result.rows != rows) {
        throw std::runtime_error{describe(config) + ": finished " + std::to_string(result.rows) +
                                 " of " + std::to_string(rows) + " rows"};
    }
    return result;
}

void run_scenarios(const BenchContext& context, BenchReport& report) {
    const auto& s = context.settings;
    // Unmeasured: a fresh cluster creates its WAL segments, loads catalogs and warms the
    // page cache on first use, which would slow whichever run came first.
    const auto warmup_rows = std::max<std::int64_t>(1, s.rows / 2);
    spdlog::info("warm-up: floor loop over {} rows (not measured)", warmup_rows);
    staged_loop(context, "bench_warmup", warmup_rows, {100, 1, Finish::complete, std::nullopt});
    // Floor, e2e and the many-route runs interleave, so that drift of a shared machine hits
    // them alike. The 1-node e2e run is also the 1-route rate the idle-routes run right
    // after it is divided by (same repetition), so it runs whenever one of them does.
    const bool one_route = wanted(s, "e2e") || wanted(s, "idle_routes") || wanted(s, "tenants");
    for (int run = 1; run <= s.repeat; ++run) {
        const auto suffix = "_r" + std::to_string(run);
        if (wanted(s, "floor")) {
            spdlog::info("floor: run {}/{}: {} rows", run, s.repeat, s.rows);
            report.floor_runs.push_back(staged_loop(context, "bench_floor", s.rows,
                                                    {100, 1, Finish::complete, std::nullopt}));
            spdlog::info("floor: {:.0f} rows/s", report.floor_runs.back().rows_per_s());
        }
        for (const int nodes : {1, 3}) {
            if (nodes == 1 ? !one_route : !wanted(s, "e2e")) continue;
            const auto tag = "e2e_" + std::to_string(nodes) + "n" + suffix;
            auto result = run_e2e(context, nodes, tag);
            spdlog::info("{}: {:.0f} rows/s", tag, result.rows_per_s());
            (nodes == 1 ? report.e2e_1node_runs : report.e2e_3node_runs).push_back(result);
            if (nodes == 1 && wanted(s, "idle_routes")) {
                // Right after the 1-route run it is divided by.
                report.idle_routes_runs.push_back(run_idle_routes(context, "idle_routes" + suffix));
                spdlog::info("idle_routes{}: {:.0f} rows/s", suffix,
                             report.idle_routes_runs.back().rows_per_s());
            }
        }
        if (wanted(s, "http_push")) {
            // The same rows over WebSocket, then over HTTP: the ratio's two sides, same run.
            const auto ws_tag = "e2e_1n_http_volume" + suffix;
            report.http_ws_runs.push_back(run_e2e(context, 1, ws_tag, s.http_rows));
            spdlog::info("{}: {:.0f} rows/s", ws_tag, report.http_ws_runs.back().rows_per_s());
            report.http_push_runs.push_back(run_http_push(context, "http_push" + suffix));
            spdlog::info("http_push{}: {:.0f} rows/s", suffix,
                         report.http_push_runs.back().rows_per_s());
        }
        if (wanted(s, "results")) {
            // Without results, then with: the cost's two sides, same run.
            const auto plain_tag = "e2e_1n_results_plain" + suffix;
            report.results_plain_runs.push_back(run_e2e(context, 1, plain_tag));
            spdlog::info("{}: {:.0f} rows/s", plain_tag,
                         report.results_plain_runs.back().rows_per_s());
            const auto kept_tag = "e2e_1n_results" + suffix;
            report.results_kept_runs.push_back(
                run_e2e_with_results(context, kept_tag, kResultBytes));
            spdlog::info("{}: {:.0f} rows/s", kept_tag,
                         report.results_kept_runs.back().rows_per_s());
        }
        if (wanted(s, "clients")) report.client_runs.push_back(run_client_workers(context, suffix));
        if (wanted(s, "tenants")) {
            const auto tag = "e2e_1n_volume" + suffix;
            report.one_route_volume_runs.push_back(run_e2e(context, 1, tag, s.tenant_rows));
            spdlog::info("{}: {:.0f} rows/s", tag,
                         report.one_route_volume_runs.back().rows_per_s());
            report.tenants_runs.push_back(run_tenants(context, "tenants" + suffix));
        }
    }
    if (wanted(s, "limit")) {
        for (const auto& config : grid_configs(s.quick)) {
            report.grid.emplace_back(config,
                                     staged_loop(context, "bench_limit", s.grid_rows, config));
            spdlog::info("limit: {}: {:.0f} rows/s", describe(config),
                         report.grid.back().second.rows_per_s());
        }
    }
    if (wanted(s, "latency")) report.latency = run_latency(context);
    if (wanted(s, "wake")) report.wake = run_wake_cost(context);
    if (wanted(s, "history")) report.history = run_history(context);
    if (wanted(s, "weighted")) report.weighted = run_weighted(context);
    if (wanted(s, "quiet_tenant")) report.quiet_tenant = run_quiet_tenant(context);
    if (wanted(s, "heartbeats")) report.heartbeats = run_heartbeats(context);
    if (wanted(s, "http_push")) report.http_latency = run_http_latency(context);
    if (wanted(s, "controls")) report.controls = run_controls(context);
}

int run(int argc, char** argv) {
    auto logger = spdlog::stderr_color_mt("bench");
    logger->set_pattern("[bench %H:%M:%S] %v");
    spdlog::set_default_logger(logger);

    CommandLine command;
    if (const auto code = parse(argc, argv, command)) return *code;
    set_child_pid_file(command.pid_file);
    install_child_reaper_signals();

    const auto& settings = command.settings;
    const auto start = std::chrono::steady_clock::now();
    BenchReport report;
    std::string error;
    try {
        BenchDatabases databases{settings.database_url};
        const PgClusterCpu pg_cpu{settings.pg_data_dir};
        if (!pg_cpu.available()) spdlog::warn("no --pg-data: PostgreSQL CPU reads as 0");
        report.machine = read_machine_info(databases);
        const BenchContext context{settings, databases, pg_cpu};
        run_scenarios(context, report);
    } catch (const std::exception& failure) {
        error = failure.what();
        spdlog::error("benchmark failed: {}", error);
    }
    report.total_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    report.load_after = load_average();
    auto json = render_json(settings, report);
    if (!error.empty()) json["error"] = error;
    std::cout << render_table(settings, report);
    if (!error.empty()) std::cout << "\nFAILED: " << error << "\n";
    std::cout << "\n" << json.dump() << std::endl;
    if (!command.json_file.empty()) std::ofstream{command.json_file} << json.dump(2) << "\n";
    return error.empty() ? 0 : 1;
}

}  // namespace

// What a run throws outside a scenario (logger, report) ends it with status 1, not terminate.
int main(int argc, char** argv) {
    try {
        return run(argc, argv);
    } catch (const std::exception& failure) {
        std::cerr << "outboxd-bench: " << failure.what() << "\n";
    } catch (...) {
        std::cerr << "outboxd-bench: unknown exception\n";
    }
    return 1;
}
