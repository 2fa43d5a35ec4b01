#pragma once

// Many tenants at once: settings.tenant_rows rows dealt evenly over
// settings.tenant_namespaces namespaces (ns-0, …) × settings.tenant_queues task queues
// (q-0, …), so every route has an equal backlog, drained together through 1 node by one
// outboxd-worker process per task queue, each serving every namespace (one route per
// namespace and queue), once per repetition. Right before each, as many rows in one route
// are drained as the e2e 1-node run (the table the tenants drain is three times the e2e
// one, and claims slow as it grows): tenants_100_ratio is the median of those pairs, and
// tenants_100_ratio_to_e2e divides by the e2e scenario's 1-node median instead. Fairness,
// from finished_at after each run: rows each namespace finished per
// settings.fairness_window_seconds window while every namespace still had a backlog
// (NamespaceShares), and the largest deviation of a share from 1/namespaces, relative to
// it; the worst run counts.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "e2e_drain.hpp"
#include "e2e_scenario.hpp"
#include "node_fleet.hpp"
#include "scenario.hpp"

namespace outboxd::bench {

struct TenantsResult {
    E2eResult drain;
    int windows = 0;            // fairness windows read
    double window_seconds = 0;  // their length (shorter than asked when partial)
    bool partial = false;       // the backlog span was shorter than one window
    bool together = true;       // every namespace had a backlog throughout the span
    double max_deviation = 0;   // max over windows and namespaces of |share − 1/N| ÷ (1/N)
    std::string worst_namespace;
    std::int64_t worst_rows = 0;   // its rows in the worst window
    std::int64_t window_rows = 0;  // all rows in the worst window

    [[nodiscard]] double rows_per_s() const { return drain.rows_per_s(); }
    [[nodiscard]] double foreign_cpu() const { return drain.foreign_cpu; }
};

class TenantsScenario final : public Scenario {
public:
    static constexpr std::string_view kName = "tenants";

    [[nodiscard]] std::string_view name() const override { return kName; }
    [[nodiscard]] std::string_view description() const override {
        return "100 tenants x 3 task queues drained together, over 1 route of as many rows; "
               "fairness";
    }
    [[nodiscard]] std::vector<std::string_view> binaries() const override {
        return {kNodeBinary, kWorkerBinary};
    }
    [[nodiscard]] std::vector<std::string_view> needs() const override {
        return {E2eScenario::kName};
    }

    void repeat(const Turn& turn) override;

    void render_table(const BenchSettings& settings, const ScenarioRegistry& registry,
                      ReportTable& table) const override;
    void add_json(const ScenarioRegistry& registry, nlohmann::json& out) const override;
    [[nodiscard]] double max_foreign_cpu() const override;

private:
    std::vector<TenantsResult> runs_;     // run i over volume_runs_[i]
    std::vector<E2eResult> volume_runs_;  // 1 route, settings.tenant_rows rows
};

}  // namespace outboxd::bench
