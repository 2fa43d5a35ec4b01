// Schedules (README, "Schedules"): the due firings of schedules on the owned shards are
// staged, a batch a run, on the reconcile's cadence.

#include <spdlog/spdlog.h>

#include "jobs.hpp"
#include "outboxd/util/untrusted_text.hpp"

namespace outboxd::maintenance {
namespace {

constexpr std::int32_t kBatch = 100;  // due schedules fired per run, at most

class ScheduleJob final : public Job {
public:
    ScheduleJob(const UpkeepSettings& settings, Upkeep upkeep)
        : settings_(settings), upkeep_(std::move(upkeep)) {}

    [[nodiscard]] std::string_view name() const override { return "schedules"; }
    [[nodiscard]] Timing timing() const override {
        return {settings_.reconcile_interval, 19, true, true, true};
    }

    std::optional<LaneWork> prepare() override {
        auto owner = upkeep_.owner();
        if (owner.ranges.empty()) return std::nullopt;
        return [this, owner = std::move(owner)](store::MaintenanceStores& db) -> Report {
            auto fired = db.schedules.fire_due(owner, kBatch);
            return [this, fired = std::move(fired)] {
                const auto& database = upkeep_.metrics.database();
                if (fired.staged > 0) {
                    spdlog::info("event=schedules_fired database={} schedules={} staged={}",
                                 database, fired.schedules, fired.staged);
                }
                for (const auto& id : fired.refused) {
                    spdlog::warn("event=schedule_refused database={} id=\"{}\"", database,
                                 util::log_safe(id));
                }
            };
        };
    }

private:
    UpkeepSettings settings_;
    Upkeep upkeep_;
};

}  // namespace

std::unique_ptr<Job> schedule_job(const UpkeepSettings& settings, const Upkeep& upkeep) {
    return std::make_unique<ScheduleJob>(settings, upkeep);
}

}  // namespace outboxd::maintenance
