#pragma once

// Several databases on the same nodes (README, "Several databases"):
// - databases_idle_ratio: one busy database drained by 1 node serving it alone, and by 1 node
//   serving it beside 20 idle databases (the two runs back to back, turned each repetition);
//   the median of beside ÷ alone (target >= 0.9). Once: what an idle database costs a node,
//   a node serving 21 idle databases against one serving 1, over the same seconds: node CPU
//   and transactions (pg_stat_database) per idle database and second.
// - databases_3_rows_per_s: three busy databases, two on the bench cluster and one on the
//   second instance (--second-database-url; without it, on the bench cluster), each a third
//   of settings.rows, drained by 1 node serving the three: rows/s over all of them. On 2
//   cores one PostgreSQL already takes most of the machine: reported, not additive.
// - database_outage_ratio (once, needs --second-pg-data): the same three databases, bigger;
//   the rate of the two healthy ones while the second instance is stopped ÷ their rate just
//   before (target >= 0.8); then it starts again and the third catches up (every row done).

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "scenario.hpp"

namespace outboxd::bench {

class DatabasesScenario final : public Scenario {
public:
    static constexpr std::string_view kName = "databases";

    [[nodiscard]] std::string_view name() const override { return kName; }
    [[nodiscard]] std::string_view description() const override {
        return "one busy database beside 20 idle ones; three busy on two instances; an "
               "instance down";
    }
    [[nodiscard]] std::vector<std::string_view> binaries() const override {
        return {kNodeBinary, kWorkerBinary};
    }

    void repeat(const Turn& turn) override;
    void once(const Turn& turn) override;

    void render_table(const BenchSettings& settings, const ScenarioRegistry& registry,
                      ReportTable& table) const override;
    void add_json(const ScenarioRegistry& registry, nlohmann::json& out) const override;

    struct IdleCost {
        double node_cpu_ms_per_s = 0;   // per idle database
        double transactions_per_s = 0;  // per idle database
        double pg_cpu_ms_per_s = 0;     // per idle database
        double seconds = 0;
    };
    struct Outage {
        double before_rows_per_s = 0;  // the healthy databases, just before
        double during_rows_per_s = 0;  // ... while the other instance was down
        double down_seconds = 0;
        double catch_up_seconds = 0;  // from the restart to its last row done
        bool caught_up = false;
        bool measured = true;  // the healthy databases still had rows at the end of the outage
    };

private:
    std::vector<std::pair<std::string, std::string>> idle_;  // made once, dropped by once()
    std::vector<double> alone_;
    std::vector<double> beside_idle_;
    std::vector<double> three_;
    std::optional<IdleCost> idle_cost_;
    std::optional<Outage> outage_;
};

}  // namespace outboxd::bench
