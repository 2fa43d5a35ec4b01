#pragma once

// A database thread: owns its connections (libpqxx connections are single-threaded) and
// runs submitted jobs in order. Keeps blocking SQL off the network loop: the loop submits a
// job and the job posts its result back.
//
// Thread-safe: submit from any thread. Jobs run on the lane's own thread. The destructor
// finishes the queued jobs, then joins.

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "outboxd/store/cluster_store.hpp"
#include "outboxd/store/outbox_store.hpp"

namespace outboxd::dispatch {

struct DbHandles {
    store::OutboxStore& outbox;
    store::ClusterStore& cluster;
};

class DbLane {
public:
    using Job = std::function<void(DbHandles)>;

    // `commits` applies to the lane's outbox store (relaxed only for the claims lane).
    DbLane(std::string name, std::string database_url,
           store::OutboxStore::Commits commits = store::OutboxStore::Commits::durable);
    ~DbLane();
    DbLane(const DbLane&) = delete;
    DbLane& operator=(const DbLane&) = delete;

    void submit(Job job);
    [[nodiscard]] std::size_t queued() const;
    [[nodiscard]] const std::string& name() const { return name_; }

private:
    void run();

    std::string name_;
    std::string database_url_;
    store::OutboxStore::Commits commits_;
    mutable std::mutex mutex_;
    std::condition_variable ready_;
    std::deque<Job> jobs_;
    bool stopping_ = false;
    std::thread thread_;
};

}  // namespace outboxd::dispatch
