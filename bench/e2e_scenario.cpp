#include "e2e_scenario.hpp"

#include <algorithm>
#include <string>

#include <spdlog/spdlog.h>

#include "floor_scenario.hpp"
#include "limit_scenario.hpp"
#include "report_format.hpp"
#include "scenario_registry.hpp"

namespace outboxd::bench {
namespace {

// Target of issue 7.
constexpr double kTargetRatioToFloor = 1.2;

E2eResult drain(const Turn& turn, int nodes) {
    const auto tag = "e2e_" + std::to_string(nodes) + "n" + turn.suffix();
    auto result = run_e2e(turn.context, nodes, tag);
    spdlog::info("{}: {:.0f} rows/s", tag, result.rows_per_s());
    return result;
}

}  // namespace

void E2eScenario::repeat(const Turn& turn) {
    one_node_.push_back(drain(turn, 1));
    // Right after the run they divide by.
    turn.run_followers();
    if (turn.selected) three_nodes_.push_back(drain(turn, 3));
}

E2eScenario::Ratios E2eScenario::ratios(const ScenarioRegistry& registry) const {
    std::optional<double> best;
    for (const auto* run : {median_run(one_node_), median_run(three_nodes_)}) {
        if (run && (!best || run->rows_per_s() > *best)) best = run->rows_per_s();
    }
    Ratios out;
    if (!best) return out;
    const auto* floor_scenario = registry.find<FloorScenario>();
    if (const auto* floor = floor_scenario ? floor_scenario->median_result() : nullptr) {
        out.to_floor = *best / floor->rows_per_s();
    }
    const auto* limit_scenario = registry.find<LimitScenario>();
    if (const auto* cell = limit_scenario ? limit_scenario->best() : nullptr) {
        out.to_limit = *best / cell->second.rows_per_s();
    }
    return out;
}

void E2eScenario::render_table(const BenchSettings& /*settings*/, const ScenarioRegistry& registry,
                               ReportTable& table) const {
    std::string out;
    for (const auto* runs : {&one_node_, &three_nodes_}) {
        const auto* run = median_run(*runs);
        if (!run) continue;
        const auto label = strf("e2e: %d node%s -> workers over WebSocket", run->nodes,
                                run->nodes == 1 ? "" : "s");
        out += strf("  %-42s %7.0f  %8.2f  %6.2f  %6.2f  %3.0f%%  %4.0f%%  %5.0f  %s%s\n",
                    label.c_str(), run->rows_per_s(), per_10k(run->node_cpu_s, run->rows),
                    per_10k(run->pg_cpu_s, run->rows), per_10k(run->worker_cpu_s, run->rows),
                    run->host_busy * 100, run->foreign_cpu * 100,
                    per_row(run->wal_bytes, run->rows), runs_list(*runs).c_str(),
                    run->complete ? ""
                                  : strf("  CAPPED at %.0f s: %lld of %lld rows done", run->seconds,
                                         static_cast<long long>(run->rows),
                                         static_cast<long long>(run->staged))
                                        .c_str());
    }
    const auto [to_floor, to_limit] = ratios(registry);
    if (to_floor) {
        out +=
            strf("  %-42s %8.2f   target >= %.1f: %s\n", "ratio to floor (best e2e / floor)",
                 *to_floor, kTargetRatioToFloor, verdict(*to_floor >= kTargetRatioToFloor).c_str());
    }
    if (to_limit)
        out += strf("  %-42s %8.2f\n", "ratio to limit (best e2e / sql limit)", *to_limit);
    table.put(std::string{kName}, out);
}

void E2eScenario::add_json(const ScenarioRegistry& registry, nlohmann::json& out) const {
    for (const char* key : {"e2e_rows_per_s_1node", "e2e_rows_per_s_3nodes", "ratio_to_floor",
                            "ratio_to_limit", "node_cpu_s_per_10k", "pg_cpu_s_per_10k"}) {
        out[key] = nullptr;
    }
    const auto put = [&out](const std::vector<E2eResult>& runs, const std::string& suffix) {
        const auto* run = median_run(runs);
        if (!run) return;
        out["e2e_rows_per_s_" + suffix] = json_rate(run->rows_per_s());
        out["e2e_runs_" + suffix] = nlohmann::json::array();
        out["foreign_cpu_runs_" + suffix] = nlohmann::json::array();
        for (const auto& r : runs) {
            out["e2e_runs_" + suffix].push_back(json_rate(r.rows_per_s()));
            out["foreign_cpu_runs_" + suffix].push_back(json_fine(r.foreign_cpu));
        }
        out["e2e_complete_" + suffix] = all_complete(runs);
        out["node_cpu_s_per_10k_" + suffix] = json_fine(per_10k(run->node_cpu_s, run->rows));
        out["pg_cpu_s_per_10k_" + suffix] = json_fine(per_10k(run->pg_cpu_s, run->rows));
        out["worker_cpu_s_per_10k_" + suffix] = json_fine(per_10k(run->worker_cpu_s, run->rows));
        out["host_busy_" + suffix] = json_fine(run->host_busy);
        out["wal_bytes_per_row_" + suffix] = json_rate(per_row(run->wal_bytes, run->rows));
        out["foreign_cpu_" + suffix] = json_fine(run->foreign_cpu);
    };
    put(one_node_, "1node");
    put(three_nodes_, "3nodes");
    // The headline CPU costs are the 1-node run's (the 3-node figures sum three nodes).
    if (const auto* run = median_run(one_node_)) {
        out["node_cpu_s_per_10k"] = json_fine(per_10k(run->node_cpu_s, run->rows));
        out["pg_cpu_s_per_10k"] = json_fine(per_10k(run->pg_cpu_s, run->rows));
    }
    const auto [to_floor, to_limit] = ratios(registry);
    if (to_floor) out["ratio_to_floor"] = json_fine(*to_floor);
    if (to_limit) out["ratio_to_limit"] = json_fine(*to_limit);
}

double E2eScenario::max_foreign_cpu() const {
    double most = 0;
    for (const auto* runs : {&one_node_, &three_nodes_}) {
        for (const auto& run : *runs) most = std::max(most, run.foreign_cpu);
    }
    return most;
}

}  // namespace outboxd::bench
