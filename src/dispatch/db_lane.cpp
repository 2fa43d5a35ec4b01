#include "outboxd/dispatch/db_lane.hpp"

#include <spdlog/spdlog.h>

namespace outboxd::dispatch {

DbLane::DbLane(std::string name, std::string database_url, store::OutboxStore::Commits commits)
    : name_(std::move(name)),
      database_url_(std::move(database_url)),
      commits_(commits),
      thread_([this] { run(); }) {}

DbLane::~DbLane() {
    {
        std::lock_guard lock{mutex_};
        stopping_ = true;
    }
    ready_.notify_all();
    thread_.join();
}

void DbLane::submit(Job job) {
    {
        std::lock_guard lock{mutex_};
        jobs_.push_back(std::move(job));
    }
    ready_.notify_one();
}

std::size_t DbLane::queued() const {
    std::lock_guard lock{mutex_};
    return jobs_.size();
}

void DbLane::run() {
    // Connections are created lazily by the stores, on this thread, and reconnect after a
    // broken connection on their next use.
    store::OutboxStore outbox{database_url_, commits_};
    store::ClusterStore cluster{database_url_};
    while (true) {
        Job job;
        {
            std::unique_lock lock{mutex_};
            ready_.wait(lock, [this] { return stopping_ || !jobs_.empty(); });
            if (jobs_.empty()) return;  // stopping, and everything queued has run
            job = std::move(jobs_.front());
            jobs_.pop_front();
        }
        try {
            job(DbHandles{outbox, cluster});
        } catch (const std::exception& error) {
            // Jobs report their own errors; this only guards the thread.
            spdlog::error("event=db_job_escaped lane={} error=\"{}\"", name_, error.what());
        }
    }
}

}  // namespace outboxd::dispatch
