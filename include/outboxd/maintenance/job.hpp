#pragma once

// One periodic job of a database's upkeep: its statements on the maintenance lane, what it
// tells the loop afterwards, and its timing. The jobs of a database are one list
// (maintenance/upkeep.hpp), run by Maintenance (maintenance.hpp): a new job is a file of
// src/maintenance and a line of that list.
//
// Thread affinity: prepare() and the report run on the loop; the lane work on the lane.

#include <chrono>
#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "outboxd/metrics/node_metrics.hpp"
#include "outboxd/store/lanes.hpp"

namespace outboxd::maintenance {

// The namespaces with ordered delivery, by what a dead letter does to its workflow.
struct OrderedNamespaces {
    std::vector<std::string> skip;
    std::vector<std::string> block;
};

// What the jobs of a database use of it, read on the loop when a run starts.
struct Upkeep {
    std::function<store::Owner()> owner;
    // Nothing while the namespaces' settings are not known yet.
    std::function<std::optional<OrderedNamespaces>()> ordered;
    // Rows were put back in line (claims re-armed, waiting rows let go), this many: behind
    // where claims read on.
    std::function<void(std::size_t)> rearmed;
    metrics::DatabaseMetrics& metrics;
};

class Job {
public:
    struct Timing {
        std::chrono::milliseconds period{1000};
        // After a run the job rests this many times as long as the run took, so that it never
        // takes more than 1/(rest + 1) of the lane (scans slow down under an old snapshot).
        int rest = 0;
        // It changes rows of the owned shards: a draining node leaves it to the next owner.
        bool pauses_on_drain = false;
        // A run of failures is logged as a warning; otherwise at debug level only.
        bool warns = true;
        // It runs at once when the node's shards change (boot, takeover): new shards may
        // hold a dead node's claims, cancelled rows, due firings.
        bool on_new_shards = false;
    };
    // What the job tells the loop after its lane work (metrics, logs, callbacks).
    using Report = std::function<void()>;
    using LaneWork = std::function<Report(store::MaintenanceStores&)>;

    virtual ~Job() = default;
    [[nodiscard]] virtual std::string_view name() const = 0;
    [[nodiscard]] virtual Timing timing() const = 0;
    // The next run's lane work, prepared on the loop; none: nothing to do now.
    [[nodiscard]] virtual std::optional<LaneWork> prepare() = 0;
};

}  // namespace outboxd::maintenance
