#pragma once

// End to end (e2e_drain.hpp): settings.rows rows drained by 1 node and by 3 nodes into the
// no-op outboxd-worker processes, each once per repetition, judged against the SQL floor
// and limit of the same benchmark. The 1-node run is the baseline of the many-route
// scenarios (the 1-route rate): it runs whenever one of them is selected, even without this
// one, and the ones that follow it (idle_routes) run right after it, before the 3-node run.

#include <optional>
#include <string_view>
#include <vector>

#include "e2e_drain.hpp"
#include "node_fleet.hpp"
#include "scenario.hpp"

namespace outboxd::bench {

class E2eScenario final : public Scenario {
public:
    static constexpr std::string_view kName = "e2e";

    [[nodiscard]] std::string_view name() const override { return kName; }
    [[nodiscard]] std::string_view description() const override {
        return "end to end: 1 and 3 nodes push the rows to no-op workers over WebSocket";
    }
    [[nodiscard]] std::vector<std::string_view> binaries() const override {
        return {kNodeBinary, kWorkerBinary};
    }

    void repeat(const Turn& turn) override;

    void render_table(const BenchSettings& settings, const ScenarioRegistry& registry,
                      ReportTable& table) const override;
    void add_json(const ScenarioRegistry& registry, nlohmann::json& out) const override;
    [[nodiscard]] double max_foreign_cpu() const override;

    // The 1-node runs, one per repetition, in order: the 1-route baseline.
    [[nodiscard]] const std::vector<E2eResult>& one_node_runs() const { return one_node_; }

private:
    // The higher of the 1-node and 3-node medians over the SQL floor's median and over the
    // SQL limit's best cell, each where both sides ran.
    struct Ratios {
        std::optional<double> to_floor;
        std::optional<double> to_limit;
    };
    [[nodiscard]] Ratios ratios(const ScenarioRegistry& registry) const;

    std::vector<E2eResult> one_node_;
    std::vector<E2eResult> three_nodes_;
};

}  // namespace outboxd::bench
