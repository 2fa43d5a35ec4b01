#pragma once

// The application's cost of the wake trigger: `wake_writers` threads, each on its own
// connection, commit single-row transactions (BEGIN; INSERT INTO outbox …; COMMIT) as
// fast as they can for `wake_seconds`, with the outbox_notify_wake trigger disabled and
// enabled, in ABBA order over `wake_rounds` rounds (off, on | on, off | off, on | …). No
// node runs; one connection LISTENs on outbox_wake and drains notifications, as a node
// would (with no listener PostgreSQL does less work per NOTIFY). The table is truncated and
// a checkpoint taken before every phase so that each starts alike.
//
// These commits wait for the disk, whose latency drifts and jumps from second to second on
// a shared machine: one fast phase moved the mean cost from 0.05 to 0.18. So the cost is
// the median over rounds of each round's own on/off ratio: a burst skews one round only.

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "scenario.hpp"

namespace outboxd::bench {

struct WakeResult {
    double rows_per_s_off = 0;  // mean over the phases with the trigger disabled
    double rows_per_s_on = 0;
    std::vector<double> round_ratios;  // each round's rows/s on ÷ off
    std::int64_t notifications = 0;    // received by the listener over the on phases

    // 1 - on/off, the median over rounds: the share of the application's insert throughput
    // the trigger costs.
    [[nodiscard]] double cost() const;
};

class WakeScenario final : public Scenario {
public:
    static constexpr std::string_view kName = "wake";

    [[nodiscard]] std::string_view name() const override { return kName; }
    [[nodiscard]] std::string_view description() const override {
        return "the wake trigger's cost to the application's single-row inserts (no node)";
    }
    [[nodiscard]] std::vector<std::string_view> binaries() const override { return {}; }

    void once(const Turn& turn) override;

    void render_table(const BenchSettings& settings, const ScenarioRegistry& registry,
                      ReportTable& table) const override;
    void add_json(const ScenarioRegistry& registry, nlohmann::json& out) const override;

private:
    std::optional<WakeResult> result_;
};

}  // namespace outboxd::bench
