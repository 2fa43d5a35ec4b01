#include "results_scenario.hpp"

#include <string>

#include <spdlog/spdlog.h>

#include "report_format.hpp"

namespace outboxd::bench {

void ResultsScenario::repeat(const Turn& turn) {
    // Without results, then with: the cost's two sides, same repetition.
    const auto plain_tag = "e2e_1n_results_plain" + turn.suffix();
    plain_runs_.push_back(run_e2e(turn.context, 1, plain_tag));
    spdlog::info("{}: {:.0f} rows/s", plain_tag, plain_runs_.back().rows_per_s());
    const auto kept_tag = "e2e_1n_results" + turn.suffix();
    kept_runs_.push_back(run_e2e_with_results(turn.context, kept_tag, kResultBytes));
    spdlog::info("{}: {:.0f} rows/s", kept_tag, kept_runs_.back().rows_per_s());
}

void ResultsScenario::render_table(const BenchSettings& /*settings*/,
                                   const ScenarioRegistry& /*registry*/, ReportTable& table) const {
    const auto* kept = median_run(kept_runs_);
    const auto* plain = median_run(plain_runs_);
    if (!kept || !plain) return;
    table.put(std::string{kName},
              "\nResults (1 node, e2e rows; workers answer results, and then not)\n" +
                  strf("  %zu-byte results: %.0f rows/s (runs %s), WAL %.0f B/row; without: %.0f "
                       "rows/s (runs %s), WAL %.0f B/row; result_cost %.3f (with / without)\n",
                       kResultBytes, kept->rows_per_s(), rates_of(kept_runs_).c_str(),
                       per_row(kept->wal_bytes, kept->rows), plain->rows_per_s(),
                       rates_of(plain_runs_).c_str(), per_row(plain->wal_bytes, plain->rows),
                       plain->rows_per_s() > 0 ? kept->rows_per_s() / plain->rows_per_s() : 0.0));
}

void ResultsScenario::add_json(const ScenarioRegistry& /*registry*/, nlohmann::json& out) const {
    out["result_cost"] = nullptr;
    const auto* kept = median_run(kept_runs_);
    const auto* plain = median_run(plain_runs_);
    if (!kept || !plain || plain->rows_per_s() <= 0) return;
    out["result_cost"] = json_fine(kept->rows_per_s() / plain->rows_per_s());
    out["result_bytes"] = kResultBytes;
    out["results_rows_per_s"] = json_rate(kept->rows_per_s());
    out["results_plain_rows_per_s"] = json_rate(plain->rows_per_s());
    out["results_wal_bytes_per_row"] = json_rate(per_row(kept->wal_bytes, kept->rows));
    out["results_plain_wal_bytes_per_row"] = json_rate(per_row(plain->wal_bytes, plain->rows));
}

}  // namespace outboxd::bench
