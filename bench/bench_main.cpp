// outboxd-bench: the benchmark driver behind scripts/bench (issue 7, docs/benchmarks.md).
//
// Runs against a PostgreSQL cluster it is given (scripts/bench starts a durable one),
// creating a fresh database per run, and starts the binaries its scenarios name
// (scenario_list.cpp) from --bin-dir. Progress goes to stderr; stdout gets a table and, as
// its last line, one JSON object. Exit code 0 when every scenario ran, 1 when one failed
// (the report then has what ran and an "error" field), 2 for bad flags or a --bin-dir
// without a binary the selected scenarios start (checked before anything runs).
// `--binaries` prints those binaries instead, one a line (scripts/bench builds them).

#include <algorithm>
#include <chrono>
#include <fstream>
#include <iostream>
#include <stdexcept>
#include <string>

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "bench_context.hpp"
#include "bench_report.hpp"
#include "child_process.hpp"
#include "claim_loop.hpp"
#include "command_line.hpp"
#include "scenario_list.hpp"

namespace {

using namespace outboxd::bench;

// Prints the binaries of the selection; with a --bin-dir, also checks them there.
int print_binaries(const ScenarioRegistry& registry, const std::string& bin_dir) {
    for (const auto& binary : registry.binaries()) std::cout << binary << "\n";
    std::cout.flush();
    if (bin_dir.empty()) return 0;
    if (const auto missing = registry.missing_binary(bin_dir)) {
        std::cerr << "outboxd-bench: " << *missing << "\n";
        return 2;
    }
    return 0;
}

// Unmeasured: a fresh cluster creates its WAL segments, loads catalogs and warms the page
// cache on first use, which would slow whichever run came first.
void warm_up(const BenchContext& context) {
    const auto rows = std::max<std::int64_t>(1, context.settings.rows / 2);
    spdlog::info("warm-up: floor loop over {} rows (not measured)", rows);
    stage_and_claim(context, "bench_warmup", rows, kFloorLoop);
}

int run(int argc, char** argv) {
    auto logger = spdlog::stderr_color_mt("bench");
    logger->set_pattern("[bench %H:%M:%S] %v");
    spdlog::set_default_logger(logger);

    auto registry = make_scenario_registry();
    CommandLine command;
    if (const auto code = parse_command_line(argc, argv, registry, command)) return *code;
    const auto& settings = command.settings;
    registry.select(settings.only);
    if (command.binaries) return print_binaries(registry, settings.bin_dir);
    if (const auto missing = registry.missing_binary(settings.bin_dir)) {
        std::cerr << "outboxd-bench: " << *missing << "\n";
        return 2;
    }
    set_child_pid_file(command.pid_file);
    install_child_reaper_signals();

    const auto start = std::chrono::steady_clock::now();
    BenchReport report;
    std::string error;
    try {
        BenchDatabases databases{settings.database_url};
        const PgClusterCpu pg_cpu{settings.pg_data_dir};
        if (!pg_cpu.available()) spdlog::warn("no --pg-data: PostgreSQL CPU reads as 0");
        report.machine = read_machine_info(databases);
        const BenchContext context{settings, databases, pg_cpu};
        warm_up(context);
        registry.run(context);
    } catch (const std::exception& failure) {
        error = failure.what();
        spdlog::error("benchmark failed: {}", error);
    }
    report.total_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    report.load_after = load_average();
    auto json = render_json(settings, report, registry);
    if (!error.empty()) json["error"] = error;
    std::cout << render_table(settings, report, registry);
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
