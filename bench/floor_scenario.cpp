#include "floor_scenario.hpp"

#include <algorithm>

#include <spdlog/spdlog.h>

#include "report_format.hpp"

namespace outboxd::bench {

void FloorScenario::repeat(const Turn& turn) {
    const auto& s = turn.settings();
    spdlog::info("floor: run {}/{}: {} rows", turn.repetition, s.repeat, s.rows);
    runs_.push_back(stage_and_claim(turn.context, "bench_floor", s.rows, kFloorLoop));
    spdlog::info("floor: {:.0f} rows/s", runs_.back().rows_per_s());
}

const ClaimLoopResult* FloorScenario::median_result() const { return median_run(runs_); }

void FloorScenario::render_table(const BenchSettings& /*settings*/,
                                 const ScenarioRegistry& /*registry*/, ReportTable& table) const {
    const auto* floor = median_result();
    if (!floor) return;
    table.put(std::string{kName},
              strf("  %-42s %7.0f  %8s  %6.2f  %6s  %4s  %4.0f%%  %5.0f  %s\n",
                   "sql floor: claim 100 + complete, 1 client", floor->rows_per_s(), "-",
                   per_10k(floor->pg_cpu_s, floor->rows), "-", "-", floor->foreign_cpu * 100,
                   per_row(floor->wal_bytes, floor->rows), runs_list(runs_).c_str()));
}

void FloorScenario::add_json(const ScenarioRegistry& /*registry*/, nlohmann::json& out) const {
    out["sql_floor_rows_per_s"] = nullptr;
    const auto* floor = median_result();
    if (!floor) return;
    out["sql_floor_rows_per_s"] = json_rate(floor->rows_per_s());
    out["sql_floor_runs"] = nlohmann::json::array();
    out["sql_floor_foreign_cpu"] = nlohmann::json::array();
    for (const auto& run : runs_) {
        out["sql_floor_runs"].push_back(json_rate(run.rows_per_s()));
        out["sql_floor_foreign_cpu"].push_back(json_fine(run.foreign_cpu));
    }
    out["sql_floor_pg_cpu_s_per_10k"] = json_fine(per_10k(floor->pg_cpu_s, floor->rows));
    out["sql_floor_wal_bytes_per_row"] = json_rate(per_row(floor->wal_bytes, floor->rows));
}

double FloorScenario::max_foreign_cpu() const {
    double most = 0;
    for (const auto& run : runs_) most = std::max(most, run.foreign_cpu);
    return most;
}

}  // namespace outboxd::bench
