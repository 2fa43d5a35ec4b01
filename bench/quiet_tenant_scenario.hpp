#pragma once

// A quiet tenant beside a busy one: settings.quiet_busy_rows rows in namespace `busy`,
// drained through 1 node by the usual no-op outboxd-worker processes (serving `busy`);
// meanwhile an in-process "application" commits one row a second into namespace `quiet`
// (one row per transaction) and an in-process SDK WorkerClient serving `quiet` records when
// each arrives. Latency = task received − COMMIT returned (steady_clock, this process), as
// in the latency scenario. It runs for settings.quiet_seconds, but only while the busy
// backlog lasts: a row is committed only when the busy tenant still has more than about
// 1.5 s of rows to do at its current rate (`backlog_lasted` false when it ran out first).

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "node_fleet.hpp"
#include "scenario.hpp"

namespace outboxd::bench {

struct QuietTenantResult {
    std::int64_t planned = 0;  // quiet rows planned (one a second)
    std::int64_t rows = 0;     // committed while the busy backlog lasted
    std::int64_t missing = 0;  // committed, not received within the drain timeout
    bool backlog_lasted = true;
    double p50_ms = 0;
    double p99_ms = 0;
    double max_ms = 0;
    double busy_rows_per_s = 0;  // the busy tenant's rate meanwhile
};

class QuietTenantScenario final : public Scenario {
public:
    static constexpr std::string_view kName = "quiet_tenant";

    [[nodiscard]] std::string_view name() const override { return kName; }
    [[nodiscard]] std::string_view description() const override {
        return "a quiet tenant, 1 row a second, beside a busy backlog: its latency";
    }
    [[nodiscard]] std::vector<std::string_view> binaries() const override {
        return {kNodeBinary, kWorkerBinary};
    }

    void once(const Turn& turn) override;

    void render_table(const BenchSettings& settings, const ScenarioRegistry& registry,
                      ReportTable& table) const override;
    void add_json(const ScenarioRegistry& registry, nlohmann::json& out) const override;

private:
    std::optional<QuietTenantResult> result_;
};

}  // namespace outboxd::bench
