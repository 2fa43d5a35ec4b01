#pragma once

// What heartbeats cost the database (README, "Task policy and heartbeats"): 10,000 tasks
// outstanding on one node at once, each heartbeating once a second from an in-process SDK
// worker (activity "long", heartbeat_timeout_ms 5000, so each heartbeat matters), for
// settings.heartbeat_seconds. The node batches what the heartbeats ask of the database;
// heartbeat_statements_per_s is the rate of its lease statements over the window
// (outboxd_lease_statements_total), beside the heartbeats it took and the rows written.
// Then every task completes and the scenario checks all are done, each claimed once.

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "node_fleet.hpp"
#include "scenario.hpp"

namespace outboxd::bench {

struct HeartbeatResult {
    std::int64_t tasks = 0;
    double seconds = 0;             // the measured window
    double heartbeats_per_s = 0;    // frames the node took
    double statements_per_s = 0;    // lease statements it ran (the key)
    double rows_written_per_s = 0;  // rows those statements wrote
    std::int64_t redelivered = 0;   // rows claimed more than once (must be 0)
};

class HeartbeatScenario final : public Scenario {
public:
    static constexpr std::string_view kName = "heartbeats";

    [[nodiscard]] std::string_view name() const override { return kName; }
    [[nodiscard]] std::string_view description() const override {
        return "10,000 tasks heartbeating once a second: the lease statements they cost";
    }
    [[nodiscard]] std::vector<std::string_view> binaries() const override { return {kNodeBinary}; }

    void once(const Turn& turn) override;

    void render_table(const BenchSettings& settings, const ScenarioRegistry& registry,
                      ReportTable& table) const override;
    void add_json(const ScenarioRegistry& registry, nlohmann::json& out) const override;

private:
    std::optional<HeartbeatResult> result_;
};

}  // namespace outboxd::bench
