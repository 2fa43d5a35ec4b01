#include "client_workers_scenario.hpp"

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <sstream>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "bench_database.hpp"
#include "child_process.hpp"
#include "node_fleet.hpp"
#include "proc_stat.hpp"
#include "report_format.hpp"

namespace outboxd::bench {
namespace {

namespace fs = std::filesystem;

// The clients live beside the binaries' sources; scripts/bench runs from the repository root.
fs::path clients_dir() { return fs::current_path() / "clients"; }

std::optional<std::string> find_program(const std::string& name) {
    const char* path = std::getenv("PATH");
    std::stringstream dirs{path ? path : ""};
    for (std::string dir; std::getline(dirs, dir, ':');) {
        const auto candidate = fs::path{dir} / name;
        if (::access(candidate.c_str(), X_OK) == 0) return candidate.string();
    }
    return std::nullopt;
}

// Worker processes of a client: `argv_for(url, n)` is process n's command line.
using Command = std::function<std::vector<std::string>(const std::string& url, int n)>;

E2eResult drain_with(const BenchContext& context, const std::string& tag, const Command& command,
                     const std::vector<std::pair<std::string, std::string>>& env) {
    const auto& settings = context.settings;
    const auto database = "bench_" + tag;
    const auto url = context.databases.create_migrated(database);
    spdlog::info("{}: staging {} rows", tag, settings.rows);
    stage_pending_rows(url, settings.rows, "e2e-");
    settle(url);
    std::vector<std::unique_ptr<ChildProcess>> workers;
    DrainOptions options;
    options.consume = [&](NodeFleet& fleet) {
        for (int n = 0; n < settings.worker_processes; ++n) {
            ChildSpec spec;
            spec.argv = command(fleet.worker_urls().front(), n);
            spec.env = env;
            spec.log_path =
                settings.work_dir + "/bench-" + tag + "-worker-" + std::to_string(n) + ".log";
            workers.push_back(std::make_unique<ChildProcess>(spec));
        }
        return std::function<double()>{[&workers] {
            double cpu = 0;
            for (const auto& worker : workers) cpu += process_cpu_seconds(worker->pid());
            return cpu;
        }};
    };
    auto result = drain_e2e(context, url, 1, tag, options);
    for (auto& worker : workers) worker->stop(std::chrono::milliseconds{2000});
    context.databases.drop(database);
    return result;
}

// A client's no-op worker: `program` then the flags every client's bench worker takes.
Command noop_worker(std::vector<std::string> program, const std::string& id_prefix,
                    const std::string& max_in_flight) {
    return [program = std::move(program), id_prefix, max_in_flight](const std::string& url, int n) {
        auto argv = program;
        for (const auto& arg : {"--url", url.c_str(), "--namespaces", "default", "--activity-types",
                                "noop", "--max-in-flight", max_in_flight.c_str()}) {
            argv.emplace_back(arg);
        }
        argv.push_back("--worker-id");
        argv.push_back(id_prefix + std::to_string(n));
        return argv;
    };
}

std::optional<double> run_graphile(const BenchContext& context, const std::string& node,
                                   const std::string& tag) {
    const auto& settings = context.settings;
    const auto database = "bench_" + tag;
    const auto url = context.databases.create_migrated(database);
    ChildSpec spec;
    spec.argv = {node,
                 (clients_dir() / "typescript/bench/graphile.mjs").string(),
                 "--database-url",
                 url,
                 "--jobs",
                 std::to_string(settings.rows)};
    spec.log_path = settings.work_dir + "/bench-" + tag + ".log";
    spdlog::info("{}: Graphile Worker drains {} jobs", tag, settings.rows);
    ChildProcess graphile{spec};
    const auto deadline = std::chrono::steady_clock::now() +
                          std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                              std::chrono::duration<double>(settings.e2e_max_seconds * 2));
    while (graphile.alive()) {
        if (std::chrono::steady_clock::now() > deadline) {
            spdlog::warn("{}: still running after {:.0f} s; stopped", tag,
                         settings.e2e_max_seconds * 2);
            graphile.stop(std::chrono::milliseconds{2000});
            break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds{200});
    }
    context.databases.drop(database);
    // Its report is the last JSON line of its output.
    std::ifstream log{spec.log_path};
    std::optional<double> rate;
    for (std::string line; std::getline(log, line);) {
        const auto parsed = nlohmann::json::parse(line, nullptr, false);
        if (parsed.is_object() && parsed.contains("graphile_batched_jobs_per_s")) {
            rate = parsed["graphile_batched_jobs_per_s"].get<double>();
        }
    }
    if (!rate) spdlog::warn("{}: no result; see {}", tag, spec.log_path);
    return rate;
}

ClientWorkersResult run_client_workers(const BenchContext& context, const std::string& suffix) {
    const auto& settings = context.settings;
    ClientWorkersResult result;
    const auto mif = std::to_string(settings.worker_max_in_flight);
    const auto node = find_program("node");
    const auto ts_dir = clients_dir() / "typescript";
    if (!node) {
        spdlog::warn("clients: no node on PATH; TypeScript client and Graphile Worker skipped");
    } else if (!fs::exists(ts_dir / "dist") || !fs::exists(ts_dir / "node_modules")) {
        spdlog::warn("clients: {} is not built (npm ci && npm run build); skipped",
                     ts_dir.string());
    } else {
        const auto script = (ts_dir / "bench/noop-worker.mjs").string();
        result.typescript = drain_with(context, "clients_ts" + suffix,
                                       noop_worker({*node, script}, "ts-", mif), {});
        spdlog::info("clients_ts{}: {:.0f} rows/s", suffix, result.typescript->rows_per_s());
        result.graphile_jobs = settings.rows;
        result.graphile_jobs_per_s = run_graphile(context, *node, "clients_graphile" + suffix);
        if (result.graphile_jobs_per_s) {
            spdlog::info("clients_graphile{}: {:.0f} jobs/s", suffix, *result.graphile_jobs_per_s);
        }
    }
    const auto py_dir = clients_dir() / "python/src";
    const auto python = fs::exists("/usr/bin/python3")
                            ? std::optional<std::string>{"/usr/bin/python3"}
                            : find_program("python3");
    if (!python || !fs::exists(py_dir / "outboxd/bench.py")) {
        spdlog::warn("clients: no python3 or no {}; Python client skipped", py_dir.string());
    } else {
        result.python = drain_with(context, "clients_py" + suffix,
                                   noop_worker({*python, "-m", "outboxd.bench"}, "py-", mif),
                                   {{"PYTHONPATH", py_dir.string()}});
        spdlog::info("clients_py{}: {:.0f} rows/s", suffix, result.python->rows_per_s());
    }
    return result;
}

struct Medians {
    std::optional<double> ts;
    std::optional<double> py;
    std::optional<double> graphile;
    std::optional<double> ratio;  // median of the runs' own ts / graphile (same-run pairs)
    std::optional<double> ts_cpu_per_10k;
    std::optional<double> py_cpu_per_10k;
};

double cpu_per_10k(const E2eResult& run) {
    return run.rows > 0 ? run.worker_cpu_s * 10000.0 / static_cast<double>(run.rows) : 0;
}

Medians medians(const std::vector<ClientWorkersResult>& runs) {
    std::vector<double> ts, py, graphile, ratio, ts_cpu, py_cpu;
    for (const auto& run : runs) {
        if (run.typescript) {
            ts.push_back(run.typescript->rows_per_s());
            ts_cpu.push_back(cpu_per_10k(*run.typescript));
        }
        if (run.python) {
            py.push_back(run.python->rows_per_s());
            py_cpu.push_back(cpu_per_10k(*run.python));
        }
        if (run.graphile_jobs_per_s) graphile.push_back(*run.graphile_jobs_per_s);
        if (run.typescript && run.graphile_jobs_per_s && *run.graphile_jobs_per_s > 0) {
            ratio.push_back(run.typescript->rows_per_s() / *run.graphile_jobs_per_s);
        }
    }
    return {median(ts),    median(py),     median(graphile),
            median(ratio), median(ts_cpu), median(py_cpu)};
}

nlohmann::json or_null(const std::optional<double>& value, bool rate) {
    if (!value) return nullptr;
    return rate ? json_rate(*value) : json_fine(*value);
}

}  // namespace

void ClientWorkersScenario::repeat(const Turn& turn) {
    runs_.push_back(run_client_workers(turn.context, turn.suffix()));
}

void ClientWorkersScenario::render_table(const BenchSettings& /*settings*/,
                                         const ScenarioRegistry& /*registry*/,
                                         ReportTable& table) const {
    if (runs_.empty()) return;
    const auto m = medians(runs_);
    const auto show = [](const std::optional<double>& v, const char* format) {
        return v ? strf(format, *v) : std::string{"not measured"};
    };
    table.put(
        std::string{kName},
        strf("\nClient workers (1 node, no-op handlers, out of process; medians of %zu runs)\n"
             "  TypeScript client: %s (worker CPU %s per 10k rows)\n"
             "  Graphile Worker, local queue and batched completions: %s\n"
             "  ts_vs_graphile: %s (target >= 1.5)\n"
             "  Python client: %s (worker CPU %s per 10k rows)\n",
             runs_.size(), show(m.ts, "%.0f rows/s").c_str(),
             show(m.ts_cpu_per_10k, "%.2f s").c_str(), show(m.graphile, "%.0f jobs/s").c_str(),
             show(m.ratio, "%.2f").c_str(), show(m.py, "%.0f rows/s").c_str(),
             show(m.py_cpu_per_10k, "%.2f s").c_str()));
}

void ClientWorkersScenario::add_json(const ScenarioRegistry& /*registry*/,
                                     nlohmann::json& out) const {
    const auto m = medians(runs_);
    out["ts_worker_rows_per_s"] = or_null(m.ts, true);
    out["graphile_batched_jobs_per_s"] = or_null(m.graphile, true);
    out["ts_vs_graphile"] = or_null(m.ratio, false);
    out["py_worker_rows_per_s"] = or_null(m.py, true);
    out["ts_worker_cpu_s_per_10k_rows"] = or_null(m.ts_cpu_per_10k, false);
    out["py_worker_cpu_s_per_10k_rows"] = or_null(m.py_cpu_per_10k, false);
}

}  // namespace outboxd::bench
