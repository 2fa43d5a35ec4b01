// Retention: finished rows (done, cancelled) older than OUTBOXD_RETENTION_S are deleted in
// batches, every minute, and cancel and pause markers that ended their use are forgotten
// (MaintenanceStore::prune_markers). Dead letters stay until requeued or purged.

#include <spdlog/spdlog.h>

#include "jobs.hpp"

namespace outboxd::maintenance {
namespace {

constexpr std::int32_t kBatch = 5000;

class RetentionJob final : public Job {
public:
    RetentionJob(const UpkeepSettings& settings, std::string database)
        : settings_(settings), database_(std::move(database)) {}

    [[nodiscard]] std::string_view name() const override { return "retention"; }
    [[nodiscard]] Timing timing() const override {
        return {settings_.retention_interval, 0, false, true};
    }

    std::optional<LaneWork> prepare() override {
        return [this, retention = settings_.retention](store::MaintenanceStores& db) -> Report {
            std::int64_t total = 0;
            for (std::int64_t n = kBatch; n == kBatch;) {
                n = db.maintenance.delete_finished(retention, kBatch);
                total += n;
            }
            if (total > 0) {
                spdlog::info("event=retention_deleted database={} rows={}", database_, total);
            }
            if (const auto pruned = db.maintenance.prune_markers(retention);
                pruned.cancels + pruned.pauses > 0) {
                spdlog::info("event=markers_pruned database={} cancelled={} paused={}", database_,
                             pruned.cancels, pruned.pauses);
            }
            return nullptr;
        };
    }

private:
    UpkeepSettings settings_;
    std::string database_;
};

}  // namespace

std::unique_ptr<Job> retention_job(const UpkeepSettings& settings, const std::string& database) {
    return std::make_unique<RetentionJob>(settings, database);
}

}  // namespace outboxd::maintenance
