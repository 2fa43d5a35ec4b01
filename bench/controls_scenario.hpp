#pragma once

// Delivery controls (controls_runs.hpp), once: ordered against unordered drains, one long
// ordered workflow, a rate limit's achieved rate over 3 nodes, priority rows behind a
// backlog, a concurrency limit's highest claimed count.

#include <optional>
#include <string_view>
#include <vector>

#include "controls_runs.hpp"
#include "node_fleet.hpp"
#include "scenario.hpp"

namespace outboxd::bench {

class ControlsScenario final : public Scenario {
public:
    static constexpr std::string_view kName = "controls";

    [[nodiscard]] std::string_view name() const override { return kName; }
    [[nodiscard]] std::string_view description() const override {
        return "delivery controls: ordering, a rate limit, priority, a concurrency limit";
    }
    [[nodiscard]] std::vector<std::string_view> binaries() const override {
        return {kNodeBinary, kWorkerBinary};
    }

    void once(const Turn& turn) override;

    void render_table(const BenchSettings& settings, const ScenarioRegistry& registry,
                      ReportTable& table) const override;
    void add_json(const ScenarioRegistry& registry, nlohmann::json& out) const override;

private:
    std::optional<ControlsResult> result_;
};

}  // namespace outboxd::bench
