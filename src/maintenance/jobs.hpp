#pragma once

// The upkeep's jobs, one file each; upkeep.cpp lists them. Internal to src/maintenance.

#include <memory>
#include <string>

#include "outboxd/maintenance/upkeep.hpp"

namespace outboxd::maintenance {

[[nodiscard]] std::unique_ptr<Job> reconcile_job(const UpkeepSettings& settings,
                                                 const Upkeep& upkeep);
[[nodiscard]] std::unique_ptr<Job> schedule_job(const UpkeepSettings& settings,
                                                const Upkeep& upkeep);
[[nodiscard]] std::unique_ptr<Job> retention_job(const UpkeepSettings& settings,
                                                 const std::string& database);
[[nodiscard]] std::unique_ptr<Job> gauge_job(const UpkeepSettings& settings, const Upkeep& upkeep);

}  // namespace outboxd::maintenance
