#pragma once

// The Python and TypeScript clients as workers, and Graphile Worker beside them (issue:
// "fast where users measure it"): the e2e drain of settings.rows no-op rows through one node
// with settings.worker_processes worker processes of the client (clients/typescript/bench/
// noop-worker.mjs, python3 -m outboxd.bench), and Graphile Worker draining as many no-op jobs
// in-process with its local queue and batched completions (clients/typescript/bench/
// graphile.mjs) on the same PostgreSQL server, same run. A client whose runtime or files are
// missing (no node, no npm ci) is skipped with the reason logged; its keys are then null.
// Once per repetition; medians reported.

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "e2e_drain.hpp"
#include "node_fleet.hpp"
#include "scenario.hpp"

namespace outboxd::bench {

struct ClientWorkersResult {
    std::optional<E2eResult> typescript;
    std::optional<E2eResult> python;
    std::optional<double> graphile_jobs_per_s;
    std::int64_t graphile_jobs = 0;
};

class ClientWorkersScenario final : public Scenario {
public:
    static constexpr std::string_view kName = "clients";

    [[nodiscard]] std::string_view name() const override { return kName; }
    [[nodiscard]] std::string_view description() const override {
        return "the TypeScript and Python clients as workers, and Graphile Worker beside them";
    }
    // node and python3 come from PATH: without one, its clients are skipped, not failed.
    [[nodiscard]] std::vector<std::string_view> binaries() const override { return {kNodeBinary}; }

    void repeat(const Turn& turn) override;

    void render_table(const BenchSettings& settings, const ScenarioRegistry& registry,
                      ReportTable& table) const override;
    void add_json(const ScenarioRegistry& registry, nlohmann::json& out) const override;

private:
    std::vector<ClientWorkersResult> runs_;
};

}  // namespace outboxd::bench
