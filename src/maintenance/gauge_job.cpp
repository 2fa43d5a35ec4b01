// The durable gauges: the live backlog per namespace on the owned shards (one grouped
// query), and the workflows a dead letter holds back in ordered namespaces that block. Every
// few seconds, resting 19 times as long as it took; best effort (a failure is a debug line).

#include <map>

#include "jobs.hpp"

namespace outboxd::maintenance {
namespace {

struct Counted {
    std::map<std::string, std::pair<double, double>> counts;  // inflight, claimed
    std::map<std::string, double> blocked;                    // workflows, by namespace
};

class GaugeJob final : public Job {
public:
    GaugeJob(const UpkeepSettings& settings, Upkeep upkeep)
        : settings_(settings), upkeep_(std::move(upkeep)) {}

    [[nodiscard]] std::string_view name() const override { return "gauges"; }
    [[nodiscard]] Timing timing() const override {
        return {settings_.gauge_interval, 19, false, false};
    }

    std::optional<LaneWork> prepare() override {
        return [this, ranges = upkeep_.owner().ranges,
                blocking = upkeep_.ordered().value_or(OrderedNamespaces{}).block](
                   store::MaintenanceStores& db) -> Report {
            Counted counted;
            for (const auto& [ns, c] : db.maintenance.count_live_by_namespace(ranges)) {
                counted.counts[ns] = {static_cast<double>(c.inflight),
                                      static_cast<double>(c.claimed)};
            }
            // Every blocking namespace has a value (0 when none is held back).
            for (const auto& ns : blocking) counted.blocked[ns] = 0;
            for (const auto& [ns, n] : db.maintenance.count_blocked_workflows(ranges, blocking)) {
                counted.blocked[ns] = static_cast<double>(n);
            }
            return [this, counted = std::move(counted)] {
                upkeep_.metrics.set_row_gauges(counted.counts);
                upkeep_.metrics.set_blocked_workflows(counted.blocked);
            };
        };
    }

private:
    UpkeepSettings settings_;
    Upkeep upkeep_;
};

}  // namespace

std::unique_ptr<Job> gauge_job(const UpkeepSettings& settings, const Upkeep& upkeep) {
    return std::make_unique<GaugeJob>(settings, upkeep);
}

}  // namespace outboxd::maintenance
