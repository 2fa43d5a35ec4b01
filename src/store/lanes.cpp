#include "outboxd/store/lanes.hpp"

#include <prometheus/counter.h>
#include <spdlog/spdlog.h>

namespace outboxd::store {

using Uses = OutboxSession::Uses;

ClaimStores::ClaimStores(const LaneConnection& c)
    : session(c.database_url, Uses::claims, c.commits, c.statement_timeout) {}

OutcomeStores::OutcomeStores(const LaneConnection& c)
    : session(c.database_url, Uses::outcomes, c.commits, c.statement_timeout) {}

MaintenanceStores::MaintenanceStores(const LaneConnection& c)
    : session(c.database_url, Uses::maintenance | Uses::schedules, c.commits, c.statement_timeout) {
}

AdminStores::AdminStores(const LaneConnection& c)
    : session(c.database_url, Uses::admin | Uses::targets | Uses::schedules | Uses::access,
              c.commits, c.statement_timeout),
      targets(session, c.secrets) {}

bool LaneThread::push(Task task) {
    {
        std::lock_guard lock{mutex_};
        if (tasks_.size() >= settings_.capacity) {
            if (settings_.rejected) settings_.rejected->Increment();
            return false;
        }
        tasks_.push_back(std::move(task));
    }
    ready_.notify_one();
    return true;
}

std::size_t LaneThread::queued() const {
    std::lock_guard lock{mutex_};
    return tasks_.size();
}

void LaneThread::start(std::function<void()> body) { thread_ = std::thread(std::move(body)); }

void LaneThread::join() {
    if (!thread_.joinable()) return;
    {
        std::lock_guard lock{mutex_};
        stopping_ = true;
    }
    ready_.notify_all();
    thread_.join();
}

void LaneThread::run_queue(const std::function<void()>& idle) {
    const auto idle_close = idle ? settings_.idle_close : std::chrono::milliseconds{0};
    bool connected_since_idle = true;
    while (true) {
        Task task;
        {
            std::unique_lock lock{mutex_};
            const auto woken = [this] { return stopping_ || !tasks_.empty(); };
            if (idle_close.count() > 0 && connected_since_idle) {
                if (!ready_.wait_for(lock, idle_close, woken)) {
                    lock.unlock();
                    idle();
                    connected_since_idle = false;
                    continue;
                }
            } else {
                ready_.wait(lock, woken);
            }
            if (tasks_.empty()) return;  // stopping, and everything queued has run
            task = std::move(tasks_.front());
            tasks_.pop_front();
        }
        connected_since_idle = true;
        // Jobs report their own errors; this only keeps one fault from ending the lane.
        try {
            task();
        } catch (const std::exception& error) {
            spdlog::error("event=db_job_escaped lane={} error=\"{}\"", settings_.name,
                          error.what());
        } catch (...) {
            spdlog::error("event=db_job_escaped lane={} error=unknown", settings_.name);
        }
    }
}

}  // namespace outboxd::store
