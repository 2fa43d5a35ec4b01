#include "limit_scenario.hpp"

#include <algorithm>
#include <optional>

#include <spdlog/spdlog.h>

#include "report_format.hpp"

namespace outboxd::bench {
namespace {

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

}  // namespace

void LimitScenario::once(const Turn& turn) {
    const auto& s = turn.settings();
    for (const auto& config : grid_configs(s.quick)) {
        grid_.emplace_back(config,
                           stage_and_claim(turn.context, "bench_limit", s.grid_rows, config));
        spdlog::info("limit: {}: {:.0f} rows/s", describe(config),
                     grid_.back().second.rows_per_s());
    }
}

const LimitScenario::Cell* LimitScenario::best() const {
    const Cell* best = nullptr;
    for (const auto& cell : grid_) {
        if (!best || cell.second.rows_per_s() > best->second.rows_per_s()) best = &cell;
    }
    return best;
}

void LimitScenario::render_table(const BenchSettings& settings,
                                 const ScenarioRegistry& /*registry*/, ReportTable& table) const {
    const auto* cell = best();
    if (!cell) return;
    const auto& [config, result] = *cell;
    table.put(std::string{kName},
              strf("  %-42s %7.0f  %8s  %6.2f  %6s  %4s  %4.0f%%  %5.0f  %s\n",
                   "sql limit: best of grid", result.rows_per_s(), "-",
                   per_10k(result.pg_cpu_s, result.rows), "-", "-", result.foreign_cpu * 100,
                   per_row(result.wal_bytes, result.rows), describe(config).c_str()));
    std::string grid = strf(
        "\nSQL limit grid (%lld rows per cell)            rows/s   pg cpu s/10k  WAL "
        "B/row\n",
        static_cast<long long>(settings.grid_rows));
    for (const auto& [each, run] : grid_) {
        grid +=
            strf("  %-42s %8.0f   %6.2f        %6.0f\n", describe(each).c_str(), run.rows_per_s(),
                 per_10k(run.pg_cpu_s, run.rows), per_row(run.wal_bytes, run.rows));
    }
    table.put("limit_grid", grid);
}

void LimitScenario::add_json(const ScenarioRegistry& /*registry*/, nlohmann::json& out) const {
    out["sql_limit_rows_per_s"] = nullptr;
    const auto* cell = best();
    if (!cell) return;
    out["sql_limit_rows_per_s"] = json_rate(cell->second.rows_per_s());
    out["sql_limit_config"] = describe(cell->first);
    auto grid = nlohmann::json::array();
    for (const auto& [config, result] : grid_) {
        grid.push_back(
            {{"config", describe(config)}, {"rows_per_s", json_rate(result.rows_per_s())}});
    }
    out["sql_limit_grid"] = grid;
}

double LimitScenario::max_foreign_cpu() const {
    double most = 0;
    for (const auto& cell : grid_) most = std::max(most, cell.second.foreign_cpu);
    return most;
}

}  // namespace outboxd::bench
