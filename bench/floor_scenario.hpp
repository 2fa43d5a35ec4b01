#pragma once

// The SQL floor of issue 7 (claim_loop.hpp, kFloorLoop) over settings.rows freshly staged
// rows, once per repetition: what the database alone does per row with the naive claim,
// the rate the e2e scenario is judged against (ratio_to_floor).

#include <string_view>
#include <vector>

#include "claim_loop.hpp"
#include "scenario.hpp"

namespace outboxd::bench {

class FloorScenario final : public Scenario {
public:
    static constexpr std::string_view kName = "floor";

    [[nodiscard]] std::string_view name() const override { return kName; }
    [[nodiscard]] std::string_view description() const override {
        return "SQL floor: 1 client claims 100 rows FOR UPDATE SKIP LOCKED, marks them done";
    }
    [[nodiscard]] std::vector<std::string_view> binaries() const override { return {}; }

    void repeat(const Turn& turn) override;

    void render_table(const BenchSettings& settings, const ScenarioRegistry& registry,
                      ReportTable& table) const override;
    void add_json(const ScenarioRegistry& registry, nlohmann::json& out) const override;
    [[nodiscard]] double max_foreign_cpu() const override;

    // The run of the median rate; nullptr before any.
    [[nodiscard]] const ClaimLoopResult* median_result() const;

private:
    std::vector<ClaimLoopResult> runs_;
};

}  // namespace outboxd::bench
