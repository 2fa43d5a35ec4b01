#pragma once

// A database thread: owns its connections (libpqxx connections are single-threaded) and
// runs submitted jobs in order. Keeps blocking SQL off the network loop: the loop submits a
// job and the job posts its result back.
//
// Bounded: a lane holds at most `capacity` queued jobs; submit() refuses more (and counts
// the refusal), so a flood of API requests or a stalled database cannot grow it without end.
//
// Thread-safe: submit from any thread. Jobs run on the lane's own thread. The destructor
// finishes the queued jobs, then joins.

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "outboxd/store/cluster_store.hpp"
#include "outboxd/store/outbox_store.hpp"

namespace prometheus {
class Counter;
}

namespace outboxd::dispatch {

struct DbHandles {
    store::OutboxStore& outbox;
    store::ClusterStore& cluster;
};

struct LaneSettings {
    std::string name;
    // Applies to the lane's outbox store (relaxed only for the claims lane).
    store::OutboxStore::Commits commits = store::OutboxStore::Commits::durable;
    // Server-side limit of every statement of the lane's outbox store (0: none).
    std::chrono::milliseconds statement_timeout{0};
    std::size_t capacity = 64;
    prometheus::Counter* rejected = nullptr;  // counts refused submissions, when set
};

class DbLane {
public:
    using Job = std::function<void(DbHandles)>;

    DbLane(LaneSettings settings, std::string database_url);
    ~DbLane();
    DbLane(const DbLane&) = delete;
    DbLane& operator=(const DbLane&) = delete;

    // Queues `job`; false (and the job is dropped) when `capacity` jobs are queued already.
    [[nodiscard]] bool submit(Job job);
    [[nodiscard]] std::size_t queued() const;
    [[nodiscard]] const std::string& name() const { return settings_.name; }

private:
    void run();

    LaneSettings settings_;
    std::string database_url_;
    mutable std::mutex mutex_;
    std::condition_variable ready_;
    std::deque<Job> jobs_;
    bool stopping_ = false;
    std::thread thread_;
};

}  // namespace outboxd::dispatch
