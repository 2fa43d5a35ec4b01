#pragma once

// What keeping workers' results costs: once per repetition, the e2e 1-node run of
// settings.rows rows with the workers answering nothing, then with each noop answering a
// kResultBytes JSON string result (e2e_drain.hpp). result_cost = with ÷ without, medians.

#include <cstddef>
#include <string_view>
#include <vector>

#include "e2e_drain.hpp"
#include "node_fleet.hpp"
#include "scenario.hpp"

namespace outboxd::bench {

class ResultsScenario final : public Scenario {
public:
    static constexpr std::string_view kName = "results";
    // Every noop task of the results run answers a JSON string of this many bytes.
    static constexpr std::size_t kResultBytes = 1024;

    [[nodiscard]] std::string_view name() const override { return kName; }
    [[nodiscard]] std::string_view description() const override {
        return "the e2e 1-node run with workers answering 1 KiB results, against none";
    }
    [[nodiscard]] std::vector<std::string_view> binaries() const override {
        return {kNodeBinary, kWorkerBinary};
    }

    void repeat(const Turn& turn) override;

    void render_table(const BenchSettings& settings, const ScenarioRegistry& registry,
                      ReportTable& table) const override;
    void add_json(const ScenarioRegistry& registry, nlohmann::json& out) const override;

private:
    std::vector<E2eResult> kept_runs_;  // run i beside plain_runs_[i]
    std::vector<E2eResult> plain_runs_;
};

}  // namespace outboxd::bench
