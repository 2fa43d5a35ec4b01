#pragma once

// One busy route beside many idle ones: the e2e run of settings.rows rows in namespace
// `default` (1 node, the usual no-op outboxd-worker processes, the same clock), with one
// more outboxd-worker process connected before the clock starts whose hello lists
// settings.idle_routes namespaces (idle-0, idle-1, …) that have no rows: one route each.
// Its credit (2 per namespace) leaves every one of them free capacity, so each is a route
// the node may claim for in every round. Each repetition's run comes right after the e2e
// scenario's 1-node run (the same rows and workers without the idle routes), which it is
// divided by: idle_routes_ratio is the median of those pairs.

#include <string_view>
#include <vector>

#include "e2e_drain.hpp"
#include "e2e_scenario.hpp"
#include "node_fleet.hpp"
#include "scenario.hpp"

namespace outboxd::bench {

class IdleRoutesScenario final : public Scenario {
public:
    static constexpr std::string_view kName = "idle_routes";

    [[nodiscard]] std::string_view name() const override { return kName; }
    [[nodiscard]] std::string_view description() const override {
        return "a busy route beside --idle-routes idle ones, over the 1-node e2e run before it";
    }
    [[nodiscard]] std::vector<std::string_view> binaries() const override {
        return {kNodeBinary, kWorkerBinary};
    }
    [[nodiscard]] std::vector<std::string_view> needs() const override {
        return {E2eScenario::kName};
    }
    [[nodiscard]] std::string_view follows() const override { return E2eScenario::kName; }

    void repeat(const Turn& turn) override;

    void render_table(const BenchSettings& settings, const ScenarioRegistry& registry,
                      ReportTable& table) const override;
    void add_json(const ScenarioRegistry& registry, nlohmann::json& out) const override;
    [[nodiscard]] double max_foreign_cpu() const override;

private:
    std::vector<E2eResult> runs_;  // run i over the e2e scenario's 1-node run i
};

}  // namespace outboxd::bench
