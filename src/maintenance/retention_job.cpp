// Retention: finished rows (done, cancelled) older than OUTBOXD_RETENTION_S are deleted in
// batches, every minute. Dead letters stay until requeued or purged.

#include <spdlog/spdlog.h>

#include "jobs.hpp"

namespace outboxd::maintenance {
namespace {

constexpr std::int32_t kBatch = 5000;

class RetentionJob final : public Job {
public:
    explicit RetentionJob(const UpkeepSettings& settings) : settings_(settings) {}

    [[nodiscard]] std::string_view name() const override { return "retention"; }
    [[nodiscard]] Timing timing() const override {
        return {settings_.retention_interval, 0, false, true};
    }

    std::optional<LaneWork> prepare() override {
        return [retention = settings_.retention](store::MaintenanceStores& db) -> Report {
            std::int64_t total = 0;
            for (std::int64_t n = kBatch; n == kBatch;) {
                n = db.maintenance.delete_finished(retention, kBatch);
                total += n;
            }
            if (total > 0) spdlog::info("event=retention_deleted rows={}", total);
            return nullptr;
        };
    }

private:
    UpkeepSettings settings_;
};

}  // namespace

std::unique_ptr<Job> retention_job(const UpkeepSettings& settings) {
    return std::make_unique<RetentionJob>(settings);
}

}  // namespace outboxd::maintenance
