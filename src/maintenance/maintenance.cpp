#include "outboxd/maintenance/maintenance.hpp"

#include <prometheus/counter.h>
#include <spdlog/spdlog.h>

#include "outboxd/util/untrusted_text.hpp"

namespace outboxd::maintenance {
namespace {

struct Ran {
    Job::Report report;
    Maintenance::Clock::duration took{};
};

}  // namespace

Maintenance::Entry::Entry(std::unique_ptr<Job> job_, const boost::asio::any_io_executor& loop,
                          prometheus::Counter& faults, const std::function<void(Entry&)>& tick)
    : job(std::move(job_)),
      timing(job->timing()),
      timer(
          loop, timing.period, [this, tick] { tick(*this); }, faults) {}

Maintenance::Maintenance(const boost::asio::any_io_executor& loop, store::MaintenanceLane& lane,
                         metrics::DatabaseMetrics& metrics, std::vector<std::unique_ptr<Job>> jobs)
    : loop_(loop), lane_(lane), database_(metrics.database()) {
    // Each tick runs its job unless it rests.
    const auto tick = [this](Entry& entry) {
        if (Clock::now() >= entry.rest_until) run(entry);
    };
    for (auto& job : jobs) {
        auto entry = std::make_unique<Entry>(std::move(job), loop, metrics.fault("timer"), tick);
        const std::string name{entry->job->name()};
        entry->ok = &metrics.maintenance_run(name, "ok");
        entry->failed = &metrics.maintenance_run(name, "failed");
        entries_.push_back(std::move(entry));
    }
}

void Maintenance::start() {
    for (auto& entry : entries_) entry->timer.start();
}

void Maintenance::stop() {
    for (auto& entry : entries_) entry->timer.stop();
}

void Maintenance::run_now(std::string_view name) {
    for (auto& entry : entries_) {
        if (entry->job->name() == name) run(*entry);
    }
}

void Maintenance::shards_changed() {
    for (auto& entry : entries_) {
        if (entry->timing.on_new_shards) run(*entry);
    }
}

void Maintenance::pause_for_drain() {
    for (auto& entry : entries_) {
        if (entry->timing.pauses_on_drain) entry->paused = true;
    }
}

void Maintenance::run(Entry& entry) {
    if (entry.running || entry.paused) return;
    auto work = entry.job->prepare();
    if (!work) return;
    entry.running = true;
    const bool queued = lane_.call(
        loop_, lifetime_.watch(),
        [work = std::move(*work)](store::MaintenanceStores& db) {
            const auto started = Clock::now();
            Ran ran;
            ran.report = work(db);
            ran.took = Clock::now() - started;
            return ran;
        },
        [this, &entry, started = Clock::now()](const store::LaneResult<Ran>& done) {
            entry.running = false;
            const auto took = done.ok() ? done.value.took : Clock::now() - started;
            entry.rest_until = Clock::now() + entry.timing.rest * took;
            finished(entry, done.error);
            if (done.ok() && done.value.report) done.value.report();
        });
    // The lane is full: the next tick tries again.
    if (!queued) entry.running = false;
}

void Maintenance::finished(Entry& entry, const std::string& error) {
    const auto now = Clock::now();
    const auto name = entry.job->name();
    auto& failures = entry.failures;
    (error.empty() ? entry.ok : entry.failed)->Increment();
    if (error.empty()) {
        const auto lasted = failures.lasted(now);
        if (const auto failed = failures.succeeded(); failed > 0 && entry.timing.warns) {
            spdlog::info("event=maintenance_recovered database={} task={} failures={} after_ms={}",
                         database_, name, failed, lasted.count());
        }
    } else if (!entry.timing.warns) {
        spdlog::debug("event=maintenance_failed database={} task={} error=\"{}\"", database_, name,
                      util::log_safe(error));
    } else if (failures.failed(now)) {
        spdlog::warn(
            "event=maintenance_failed database={} task={} failures={} for_ms={} error=\"{}\"",
            database_, name, failures.failures(), failures.lasted(now).count(),
            util::log_safe(error));
    }
}

}  // namespace outboxd::maintenance
