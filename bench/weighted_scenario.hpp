#pragma once

// Weighted shares: three namespaces with weights 1, 2 and 4 (PUT /v1/namespaces/{ns}
// {"weight": w}) and equal backlogs of settings.weighted_rows rows, drained together
// through 1 node by one no-op outboxd-worker process per namespace (each with a credit of
// 4 node batches, so that no worker binds before the batch does), stopped once one
// namespace has run dry (or at settings.e2e_max_seconds). The shares are the rows each
// finished while all three still had a backlog (NamespaceShares, one window); the result
// is the worst relative error against 1/7, 2/7 and 4/7. A node that refuses the weight
// (a node before weights: 400, unknown field 'weight') gives no figure and a note, not a
// failure.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "node_fleet.hpp"
#include "scenario.hpp"

namespace outboxd::bench {

struct WeightedResult {
    bool supported = false;
    std::string note;  // why there is no figure
    std::vector<std::string> namespaces;
    std::vector<double> weights;
    std::vector<double> shares;  // of the rows finished in the span, per namespace
    double max_error = 0;        // max |share − expected| ÷ expected
    double span_seconds = 0;     // all three backlogged
    std::int64_t rows = 0;       // finished in the span
    bool together = true;        // see NamespaceShares
};

class WeightedScenario final : public Scenario {
public:
    static constexpr std::string_view kName = "weighted";

    [[nodiscard]] std::string_view name() const override { return kName; }
    [[nodiscard]] std::string_view description() const override {
        return "three namespaces weighted 1:2:4 drained together: the shares against 1/7, 2/7, 4/7";
    }
    [[nodiscard]] std::vector<std::string_view> binaries() const override {
        return {kNodeBinary, kWorkerBinary};
    }

    void once(const Turn& turn) override;

    void render_table(const BenchSettings& settings, const ScenarioRegistry& registry,
                      ReportTable& table) const override;
    void add_json(const ScenarioRegistry& registry, nlohmann::json& out) const override;

private:
    std::optional<WeightedResult> result_;
};

}  // namespace outboxd::bench
