#pragma once

// Failover (README, "Operating with HA PostgreSQL"), once per benchmark:
// - takeover_s: 5 nodes on one database (lease TTL takeover_lease_ttl_ms); one killed with
//   -9; the time until a survivor owns every shard it held (target <= TTL + one tick, a third
//   of the TTL).
// - pgbouncer_ratio: the 1-node e2e drain through PgBouncer in session mode ÷ the same drain
//   direct, run back to back (report).
// - outage_duplicates (needs --second-pg-data): 3 nodes, 3,000 tasks held in flight by
//   sleeping workers, the second instance stopped for 3 × the TTL and started: tasks a worker
//   received more than once (its received log; target 0).
// - switchover_stall_s (needs --second-pg-data): the second instance gets a synchronous
//   streaming standby; 3 nodes given both (target_session_attrs=read-write) drain rows; the
//   primary stops and the standby is promoted: the time from the stop to the first row done
//   on the new primary (target <= 2 × TTL), and the tasks a worker received more than once
//   (switchover_duplicates, report). Afterwards the standby is removed and the second
//   instance runs on as a primary again.
// Not in CI's smoke run.

#include <optional>
#include <string_view>
#include <vector>

#include "scenario.hpp"

namespace outboxd::bench {

struct FailoverResult {
    std::optional<double> takeover_s;
    int lease_ttl_ms = 0;
    std::optional<double> direct_rows_per_s;
    std::optional<double> pgbouncer_rows_per_s;
    std::optional<std::int64_t> outage_duplicates;
    std::optional<std::int64_t> outage_in_flight;
    std::optional<double> switchover_stall_s;
    std::optional<std::int64_t> switchover_duplicates;
};

class FailoverScenario final : public Scenario {
public:
    static constexpr std::string_view kName = "failover";

    [[nodiscard]] std::string_view name() const override { return kName; }
    [[nodiscard]] std::string_view description() const override {
        return "takeover after kill -9, PgBouncer, a database outage, a switchover to a standby";
    }
    [[nodiscard]] std::vector<std::string_view> binaries() const override {
        return {kNodeBinary, kWorkerBinary};
    }

    void once(const Turn& turn) override;

    void render_table(const BenchSettings& settings, const ScenarioRegistry& registry,
                      ReportTable& table) const override;
    void add_json(const ScenarioRegistry& registry, nlohmann::json& out) const override;

private:
    FailoverResult result_;
    bool ran_ = false;
};

}  // namespace outboxd::bench
