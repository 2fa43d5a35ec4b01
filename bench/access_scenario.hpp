#pragma once

// What access control costs the drain (README, "Security"): settings.rows rows dealt over
// 50 namespaces, drained through 1 node by the no-op workers, once with the bootstrap
// tokens (the workers present OUTBOXD_WORKER_TOKEN) and once with 1,000 managed credentials
// in the table (the workers present one of them, a worker of the 50 namespaces), the two
// runs back to back in turned order each repetition. access_managed_ratio is the median of
// managed ÷ bootstrap over the repetitions: a credential is checked when a worker connects
// and a request arrives, never per task, so it should stay near 1.

#include <string_view>
#include <vector>

#include "e2e_drain.hpp"
#include "scenario.hpp"

namespace outboxd::bench {

class AccessScenario final : public Scenario {
public:
    static constexpr std::string_view kName = "access";

    [[nodiscard]] std::string_view name() const override { return kName; }
    [[nodiscard]] std::string_view description() const override {
        return "50 namespaces drained with bootstrap tokens vs 1,000 managed credentials";
    }
    [[nodiscard]] std::vector<std::string_view> binaries() const override {
        return {kNodeBinary, kWorkerBinary};
    }

    void repeat(const Turn& turn) override;

    void render_table(const BenchSettings& settings, const ScenarioRegistry& registry,
                      ReportTable& table) const override;
    void add_json(const ScenarioRegistry& registry, nlohmann::json& out) const override;
    [[nodiscard]] double max_foreign_cpu() const override;

private:
    std::vector<E2eResult> bootstrap_;
    std::vector<E2eResult> managed_;
};

}  // namespace outboxd::bench
