#pragma once

// The jobs of a database's upkeep, in one list (src/maintenance/upkeep.cpp):
// - reconcile: re-arms claims of incarnations that are gone (orphaned) and claims older than
//   a task may take (stale, whoever holds them), settles rows of cancelled workflows, and lets
//   go the waiting rows of ordered workflows that nothing holds back any more (ordered
//   delivery's backstop, README, "Delivery controls");
// - schedules: stages the due firings of schedules on the owned shards (README, "Schedules");
// - retention: deletes finished rows older than the retention, in batches;
// - gauges: counts the live backlog per namespace (one grouped query) for the durable gauges,
//   and the workflows a dead letter holds back in ordered namespaces.

#include <chrono>
#include <memory>
#include <vector>

#include "outboxd/config/defaults.hpp"
#include "outboxd/maintenance/job.hpp"

namespace outboxd::maintenance {

struct UpkeepSettings {
    // A claimer whose heartbeat is older than this is dead: its claims are re-armed.
    std::chrono::milliseconds liveness{defaults::kLeaseTtl};
    // Claims older than this are re-armed whoever holds them (task timeout + grace).
    std::chrono::milliseconds stale{defaults::kTaskTimeout + defaults::kStaleGrace};
    // ... and claims whose holder wrote a lease, this long after it ended.
    std::chrono::milliseconds stale_grace{defaults::kStaleGrace};
    std::chrono::milliseconds reconcile_interval{1000};
    std::chrono::seconds retention{defaults::kRetention};
    std::chrono::milliseconds retention_interval{60000};
    // The durable gauges count the whole live backlog (one grouped query): every few
    // seconds, not per scrape.
    std::chrono::milliseconds gauge_interval{5000};
};

[[nodiscard]] std::vector<std::unique_ptr<Job>> upkeep_jobs(const UpkeepSettings& settings,
                                                            const Upkeep& upkeep);

}  // namespace outboxd::maintenance
