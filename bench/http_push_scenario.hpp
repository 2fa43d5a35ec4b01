#pragma once

// HTTP push (README, "HTTP push"): once per repetition, settings.http_rows rows drained by
// one node into a local outboxd-receiver process with a no-op handler (keep-alive, answers
// 200 at once; the target's max_in_flight settings.http_max_in_flight), right after the same
// rows over WebSocket to the usual outboxd-worker processes: http_push_ratio_to_ws. Then,
// once, the latency of HTTP push at a steady rate (latency_probe.hpp), COMMIT -> request
// received by an endpoint in the driver.

#include <optional>
#include <string_view>
#include <vector>

#include "e2e_drain.hpp"
#include "latency_probe.hpp"
#include "node_fleet.hpp"
#include "scenario.hpp"

namespace outboxd::bench {

// The HTTP target's executable, started from --bin-dir.
inline constexpr std::string_view kReceiverBinary = "outboxd-receiver";

class HttpPushScenario final : public Scenario {
public:
    static constexpr std::string_view kName = "http_push";

    [[nodiscard]] std::string_view name() const override { return kName; }
    [[nodiscard]] std::string_view description() const override {
        return "HTTP push into outboxd-receiver against the same rows over WebSocket; its "
               "latency";
    }
    [[nodiscard]] std::vector<std::string_view> binaries() const override {
        return {kNodeBinary, kWorkerBinary, kReceiverBinary};
    }

    void repeat(const Turn& turn) override;
    void once(const Turn& turn) override;

    void render_table(const BenchSettings& settings, const ScenarioRegistry& registry,
                      ReportTable& table) const override;
    void add_json(const ScenarioRegistry& registry, nlohmann::json& out) const override;
    [[nodiscard]] double max_foreign_cpu() const override;

private:
    std::vector<E2eResult> push_runs_;  // run i beside ws_runs_[i]
    std::vector<E2eResult> ws_runs_;
    std::optional<LatencyResult> latency_;
};

}  // namespace outboxd::bench
