#pragma once

// The SQL limit: the claim loop (claim_loop.hpp) over a grid of batch sizes, client counts
// and finishes, settings.grid_rows freshly staged rows per cell, once. Its best cell
// (sql_limit_rows_per_s) is the most the database reaches; the table shows it beside the
// floor and the whole grid at its end.

#include <string_view>
#include <utility>
#include <vector>

#include "claim_loop.hpp"
#include "scenario.hpp"

namespace outboxd::bench {

class LimitScenario final : public Scenario {
public:
    static constexpr std::string_view kName = "limit";
    using Cell = std::pair<ClaimLoopConfig, ClaimLoopResult>;

    [[nodiscard]] std::string_view name() const override { return kName; }
    [[nodiscard]] std::string_view description() const override {
        return "SQL limit: the claim loop over a grid of batch sizes and clients; its best cell";
    }
    [[nodiscard]] std::vector<std::string_view> binaries() const override { return {}; }

    void once(const Turn& turn) override;

    void render_table(const BenchSettings& settings, const ScenarioRegistry& registry,
                      ReportTable& table) const override;
    void add_json(const ScenarioRegistry& registry, nlohmann::json& out) const override;
    [[nodiscard]] double max_foreign_cpu() const override;

    // The cell of the highest rate; nullptr before any.
    [[nodiscard]] const Cell* best() const;

private:
    std::vector<Cell> grid_;
};

}  // namespace outboxd::bench
