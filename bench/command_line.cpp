#include "command_line.hpp"

#include <algorithm>
#include <iostream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <CLI/CLI.hpp>

#include "outboxd/util/secret_file.hpp"
#include "report_format.hpp"

namespace outboxd::bench {
namespace {

// The footer of --help: every scenario, its --only key and what it measures.
std::string scenario_list(const ScenarioRegistry& registry) {
    std::string text = "Scenarios (--only), in run order:\n";
    for (const auto& scenario : registry.scenarios()) {
        text += strf("  %-14s%s\n", std::string{scenario->name()}.c_str(),
                     std::string{scenario->description()}.c_str());
    }
    return text;
}

}  // namespace

std::optional<int> parse_command_line(int argc, char** argv, const ScenarioRegistry& registry,
                                      CommandLine& command) {
    CLI::App app{"outboxd-bench: benchmark driver (run it through scripts/bench)"};
    auto& s = command.settings;
    std::vector<std::string> node_env;
    // --binaries needs none of a run's settings: it is looked for before parsing, so that the
    // ones a run requires may be left out.
    const bool binaries_only =
        std::find(argv + 1, argv + argc, std::string_view{"--binaries"}) != argv + argc;
    // One of the two is required (checked after parsing): a URL may hold a password.
    auto* database_url = app.add_option("--database-url", s.database_url,
                                        "postgresql:// URI of a superuser on the bench cluster");
    std::string database_url_file;
    auto* database_url_from_file =
        app.add_option("--database-url-file", database_url_file,
                       "read --database-url from this file (trailing line breaks trimmed)")
            ->excludes(database_url);
    app.add_option("--pg-data", s.pg_data_dir, "the cluster's data directory (for its CPU time)");
    app.add_option("--second-database-url", s.second_database_url,
                   "postgresql:// URI of a superuser on a second cluster (databases scenario)");
    app.add_option("--second-pg-data", s.second_pg_data_dir,
                   "the second cluster's data directory: the databases scenario stops and starts "
                   "it");
    app.add_option("--bin-dir", s.bin_dir,
                   "directory holding the binaries the scenarios start (--binaries)")
        ->required(!binaries_only);
    app.add_option("--work-dir", s.work_dir, "logs of the processes it starts")
        ->required(!binaries_only);
    app.add_flag("--binaries", command.binaries,
                 "print the binaries the selected scenarios start from --bin-dir, one a line, and "
                 "exit; with --bin-dir, fail (status 2) when one is not an executable there");
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
    auto* broker_rows =
        app.add_option("--broker-rows", s.broker_rows,
                       "rows per NATS and AMQP target run, and the WebSocket run beside them "
                       "(50000; quick 20000)")
            ->check(CLI::Range(std::int64_t{1}, std::int64_t{100'000'000}));
    app.add_option("--broker-max-in-flight", s.broker_max_in_flight,
                   "the broker targets' max_in_flight (512)")
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
    app.add_option("--only", s.only, "scenarios to run, comma-separated (below; default: all)")
        ->delimiter(',')
        ->check(CLI::IsMember(registry.names()));
    app.footer(scenario_list(registry));
    app.add_option("--json-file", command.json_file, "also write the JSON result here");
    app.add_option("--pid-file", command.pid_file, "append the pid of every child process here");
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& error) {
        return app.exit(error);
    }
    if (*database_url_from_file) {
        try {
            s.database_url = util::read_secret_file(database_url_file);
        } catch (const std::runtime_error& error) {
            std::cerr << "outboxd-bench: --database-url-file: " << error.what() << '\n';
            return 2;
        }
    }
    if (!binaries_only && s.database_url.empty()) {
        std::cerr << "outboxd-bench: --database-url or --database-url-file is required\n";
        return 2;
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
        if (!*broker_rows) s.broker_rows = 20'000;
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
        if (!*broker_rows) s.broker_rows = 10'000;
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

}  // namespace outboxd::bench
