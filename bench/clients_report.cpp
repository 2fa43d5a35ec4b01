#include "clients_report.hpp"

#include <algorithm>
#include <optional>
#include <vector>

#include "report_format.hpp"

namespace outboxd::bench {
namespace {

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

Medians medians(const BenchReport& report) {
    std::vector<double> ts, py, graphile, ratio, ts_cpu, py_cpu;
    for (const auto& run : report.client_runs) {
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

std::string render_clients_table(const BenchReport& report) {
    if (report.client_runs.empty()) return {};
    const auto m = medians(report);
    const auto show = [](const std::optional<double>& v, const char* format) {
        return v ? strf(format, *v) : std::string{"not measured"};
    };
    return strf(
        "\nClient workers (1 node, no-op handlers, out of process; medians of %zu runs)\n"
        "  TypeScript client: %s (worker CPU %s per 10k rows)\n"
        "  Graphile Worker, local queue and batched completions: %s\n"
        "  ts_vs_graphile: %s (target >= 1.5)\n"
        "  Python client: %s (worker CPU %s per 10k rows)\n",
        report.client_runs.size(), show(m.ts, "%.0f rows/s").c_str(),
        show(m.ts_cpu_per_10k, "%.2f s").c_str(), show(m.graphile, "%.0f jobs/s").c_str(),
        show(m.ratio, "%.2f").c_str(), show(m.py, "%.0f rows/s").c_str(),
        show(m.py_cpu_per_10k, "%.2f s").c_str());
}

void add_clients_json(nlohmann::json& out, const BenchReport& report) {
    const auto m = medians(report);
    out["ts_worker_rows_per_s"] = or_null(m.ts, true);
    out["graphile_batched_jobs_per_s"] = or_null(m.graphile, true);
    out["ts_vs_graphile"] = or_null(m.ratio, false);
    out["py_worker_rows_per_s"] = or_null(m.py, true);
    out["ts_worker_cpu_s_per_10k_rows"] = or_null(m.ts_cpu_per_10k, false);
    out["py_worker_cpu_s_per_10k_rows"] = or_null(m.py_cpu_per_10k, false);
}

}  // namespace outboxd::bench
