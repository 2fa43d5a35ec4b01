#include "outboxd/maintenance/upkeep.hpp"

#include "jobs.hpp"

namespace outboxd::maintenance {

std::vector<std::unique_ptr<Job>> upkeep_jobs(const UpkeepSettings& settings,
                                              const Upkeep& upkeep) {
    std::vector<std::unique_ptr<Job>> jobs;
    jobs.push_back(reconcile_job(settings, upkeep));
    jobs.push_back(schedule_job(settings, upkeep));
    jobs.push_back(retention_job(settings, upkeep.metrics.database()));
    jobs.push_back(gauge_job(settings, upkeep));
    return jobs;
}

}  // namespace outboxd::maintenance
