#pragma once

// Claim cost against history. The same rows (snapshot_rows) are drained end to end
// through one outboxd node and no-op workers (the headline figures)
//   (a) on a clean table,
//   (b) after `history_rows` finished rows (done an hour ago, within retention) were
//       inserted and the table vacuumed,
//   (c) as (b), with a concurrent REPEATABLE READ transaction that took its snapshot just
//       before the clock started and holds it throughout,
// each run stopped at `snapshot_max_seconds` (its rate is over the rows done by then), the
// three conditions taking turns `history_repeat` times. Then the SQL floor loop (one
// client, claim 100 + complete) runs once per condition on N rows, to show what the naive
// claim from the front of the index does under the same conditions.
// The history is generated once into a template database and copied for each run.

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "claim_loop.hpp"
#include "e2e_drain.hpp"
#include "node_fleet.hpp"
#include "scenario.hpp"

namespace outboxd::bench {

struct HistoryResult {
    std::int64_t history_rows = 0;
    double history_generate_seconds = 0;
    E2eResult clean;
    E2eResult history;
    E2eResult old_snapshot;
    std::map<std::string, std::vector<double>> runs;  // rows/s of each run, by condition tag
    ClaimLoopResult floor_clean;
    ClaimLoopResult floor_history;
    ClaimLoopResult floor_old_snapshot;
};

class HistoryScenario final : public Scenario {
public:
    static constexpr std::string_view kName = "history";

    [[nodiscard]] std::string_view name() const override { return kName; }
    [[nodiscard]] std::string_view description() const override {
        return "e2e and the floor loop beside --history-rows finished rows, and under an old "
               "snapshot";
    }
    [[nodiscard]] std::vector<std::string_view> binaries() const override {
        return {kNodeBinary, kWorkerBinary};
    }

    void once(const Turn& turn) override;

    void render_table(const BenchSettings& settings, const ScenarioRegistry& registry,
                      ReportTable& table) const override;
    void add_json(const ScenarioRegistry& registry, nlohmann::json& out) const override;
    [[nodiscard]] double max_foreign_cpu() const override;

private:
    std::optional<HistoryResult> result_;
};

}  // namespace outboxd::bench
