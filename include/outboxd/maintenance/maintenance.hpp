#pragma once

// A database's periodic upkeep: runs its jobs (job.hpp) on the maintenance lane, each on its
// own timer, one run of a job at a time, each resting after a run as its timing says.
// Failures are logged when a run of them starts, now and then, and when it ends.
//
// Thread affinity: the loop thread; the jobs' statements run on the maintenance lane.

#include <chrono>
#include <memory>
#include <string_view>
#include <vector>

#include <boost/asio/any_io_executor.hpp>

#include "outboxd/maintenance/job.hpp"
#include "outboxd/util/failure_run.hpp"
#include "outboxd/util/lifetime.hpp"
#include "outboxd/util/periodic.hpp"

namespace outboxd::maintenance {

class Maintenance {
public:
    using Clock = std::chrono::steady_clock;

    Maintenance(const boost::asio::any_io_executor& loop, store::MaintenanceLane& lane,
                metrics::DatabaseMetrics& metrics, std::vector<std::unique_ptr<Job>> jobs);

    void start();
    void stop();
    // Runs the job `name` now, rest or not, unless it runs already or is paused.
    void run_now(std::string_view name);
    // The owned shards changed (boot, takeover): the jobs that say so run now.
    void shards_changed();
    // Drain: the jobs that change the owned shards' rows run no more (the next owner runs
    // them).
    void pause_for_drain();

private:
    struct Entry {
        Entry(std::unique_ptr<Job> job, const boost::asio::any_io_executor& loop,
              prometheus::Counter& faults, const std::function<void(Entry&)>& tick);
        std::unique_ptr<Job> job;
        Job::Timing timing;
        util::Periodic timer;
        Clock::time_point rest_until{};
        bool running = false;
        bool paused = false;
        util::FailureRun failures;
        prometheus::Counter* ok = nullptr;  // outboxd_maintenance_runs_total{job, result}
        prometheus::Counter* failed = nullptr;
    };

    void run(Entry& entry);
    void finished(Entry& entry, const std::string& error);

    boost::asio::any_io_executor loop_;
    store::MaintenanceLane& lane_;
    std::string database_;  // names the jobs in the log
    std::vector<std::unique_ptr<Entry>> entries_;
    util::Lifetime lifetime_;
};

}  // namespace outboxd::maintenance
