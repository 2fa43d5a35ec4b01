#include "outboxd/dispatch/db_lane.hpp"

#include <prometheus/counter.h>
#include <spdlog/spdlog.h>

namespace outboxd::dispatch {

DbLane::DbLane(LaneSettings settings, std::string database_url)
    : settings_(std::move(settings)),
      database_url_(std::move(database_url)),
      thread_([this] { run(); }) {}

DbLane::~DbLane() {
    {
        std::lock_guard lock{mutex_};
        stopping_ = true;
    }
    ready_.notify_all();
    thread_.join();
}

bool DbLane::submit(Job job) {
    {
        std::lock_guard lock{mutex_};
        if (jobs_.size() >= settings_.capacity) {
            if (settings_.rejected) settings_.rejected->Increment();
            return false;
        }
        jobs_.push_back(std::move(job));
    }
    ready_.notify_one();
    return true;
}

std::size_t DbLane::queued() const {
    std::lock_guard lock{mutex_};
    return jobs_.size();
}

void DbLane::run() {
    // Connections are created lazily by the stores, on this thread, and reconnect after a
    // broken connection on their next use.
    store::OutboxSession session{database_url_, settings_.commits, settings_.statement_timeout};
    store::ClaimStore claims{session};
    store::OutcomeStore outcomes{session};
    store::MaintenanceStore maintenance{session};
    store::AdminStore admin{session};
    store::ClusterStore cluster{database_url_};
    store::TargetStore targets{session};
    store::ScheduleStore schedules{session};
    while (true) {
        Job job;
        {
            std::unique_lock lock{mutex_};
            ready_.wait(lock, [this] { return stopping_ || !jobs_.empty(); });
            if (jobs_.empty()) return;  // stopping, and everything queued has run
            job = std::move(jobs_.front());
            jobs_.pop_front();
        }
        // Jobs report their own errors; this only keeps one fault from ending the lane.
        try {
            job(DbHandles{claims, outcomes, maintenance, admin, cluster, targets, schedules});
        } catch (const std::exception& error) {
            spdlog::error("event=db_job_escaped lane={} error=\"{}\"", settings_.name,
                          error.what());
        } catch (...) {
            spdlog::error("event=db_job_escaped lane={} error=unknown", settings_.name);
        }
    }
}

}  // namespace outboxd::dispatch
