#pragma once

// Latency at a steady rate (latency_probe.hpp) with an in-process SDK WorkerClient as the
// receiver: COMMIT returned -> task received, at settings.latency_rate rows/s through 1 node.

#include <optional>
#include <string_view>
#include <vector>

#include "latency_probe.hpp"
#include "node_fleet.hpp"
#include "scenario.hpp"

namespace outboxd::bench {

class LatencyScenario final : public Scenario {
public:
    static constexpr std::string_view kName = "latency";

    [[nodiscard]] std::string_view name() const override { return kName; }
    [[nodiscard]] std::string_view description() const override {
        return "latency from COMMIT to an in-process SDK worker at --latency-rate rows/s";
    }
    [[nodiscard]] std::vector<std::string_view> binaries() const override { return {kNodeBinary}; }

    void once(const Turn& turn) override;

    void render_table(const BenchSettings& settings, const ScenarioRegistry& registry,
                      ReportTable& table) const override;
    void add_json(const ScenarioRegistry& registry, nlohmann::json& out) const override;

private:
    std::optional<LatencyResult> result_;
};

}  // namespace outboxd::bench
