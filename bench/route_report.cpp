#include "route_report.hpp"

#include "e2e_scenario.hpp"
#include "report_format.hpp"

namespace outboxd::bench {

double ms_per_round(const E2eResult& run) {
    return run.claim_rounds > 0 ? run.claim_seconds * 1e3 / static_cast<double>(run.claim_rounds)
                                : 0;
}

double rows_per_round(const E2eResult& run) {
    return run.claim_rounds > 0
               ? static_cast<double>(run.rows) / static_cast<double>(run.claim_rounds)
               : 0;
}

std::string drain_note(const E2eResult& run) {
    std::string note = strf(
        "claim rounds %.1f ms, %.1f rows each; cpu s/10k node %.2f, pg %.2f, workers %.2f; "
        "WAL %.0f B/row",
        ms_per_round(run), rows_per_round(run), per_10k(run.node_cpu_s, run.rows),
        per_10k(run.pg_cpu_s, run.rows), per_10k(run.worker_cpu_s, run.rows),
        per_row(run.wal_bytes, run.rows));
    if (!run.complete) {
        note += strf("; CAPPED at %.0f s: %lld of %lld rows done", run.seconds,
                     static_cast<long long>(run.rows), static_cast<long long>(run.staged));
    }
    return note;
}

std::string ratio_list(const std::vector<double>& values) {
    std::string text;
    for (const double value : values) text += (text.empty() ? "" : ", ") + strf("%.3f", value);
    return text;
}

std::optional<double> one_route_rate(const E2eScenario& e2e) {
    const auto* run = median_run(e2e.one_node_runs());
    if (!run || run->rows_per_s() <= 0) return std::nullopt;
    return run->rows_per_s();
}

void put_one_route(const E2eScenario& e2e, ReportTable& table) {
    const auto rate = one_route_rate(e2e);
    if (!rate) return;
    table.put("one_route",
              strf("  ratios to the 1-route rate, the e2e 1-node median of this run: %.0f rows/s "
                   "(%s)\n",
                   *rate, drain_note(*median_run(e2e.one_node_runs())).c_str()));
}

void add_one_route_json(const E2eScenario& e2e, nlohmann::json& out) {
    const auto* run = median_run(e2e.one_node_runs());
    if (!run) return;
    out["one_route_rows_per_s"] = json_rate(run->rows_per_s());
    out["one_route_ms_per_claim_round"] = json_fine(ms_per_round(*run));
    out["one_route_rows_per_claim_round"] = json_fine(rows_per_round(*run));
}

}  // namespace outboxd::bench
