#pragma once

// A database thread: owns its connections (libpqxx connections are single-threaded) and
// runs submitted jobs in order. Keeps blocking SQL off the network loop: the loop calls a
// job on the lane with call(), and its result (or the error it threw) comes back to the
// loop, to the owner that asked, while that owner lives.
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
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <variant>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/post.hpp>

#include "outboxd/store/admin_store.hpp"
#include "outboxd/store/claim_store.hpp"
#include "outboxd/store/cluster_store.hpp"
#include "outboxd/store/maintenance_store.hpp"
#include "outboxd/store/outbox_session.hpp"
#include "outboxd/store/outcome_store.hpp"
#include "outboxd/store/schedule_store.hpp"
#include "outboxd/store/target_store.hpp"

namespace prometheus {
class Counter;
}

namespace outboxd::dispatch {

// The lane's stores, over its one outbox session (and the cluster's connection).
struct DbHandles {
    store::ClaimStore& claims;
    store::OutcomeStore& outcomes;
    store::MaintenanceStore& maintenance;
    store::AdminStore& admin;
    store::ClusterStore& cluster;
    store::TargetStore& targets;
    store::ScheduleStore& schedules;
};

struct LaneSettings {
    std::string name;
    // Applies to the lane's outbox session (relaxed only for the claims lane).
    store::OutboxSession::Commits commits = store::OutboxSession::Commits::durable;
    // Server-side limit of every statement of the lane's outbox session (0: none).
    std::chrono::milliseconds statement_timeout{0};
    std::size_t capacity = 64;
    prometheus::Counter* rejected = nullptr;  // counts refused submissions, when set
};

// What a job called on a lane gave back: its value, or the error it threw (then `value` is
// value-initialised). A job that returns nothing gives a std::monostate.
template <typename T>
struct LaneResult {
    T value{};
    std::string error;  // empty: the job returned

    [[nodiscard]] bool ok() const { return error.empty(); }
};

template <typename Work>
using LaneValue = std::conditional_t<std::is_void_v<std::invoke_result_t<Work&, DbHandles>>,
                                     std::monostate, std::invoke_result_t<Work&, DbHandles>>;

class DbLane {
public:
    using Job = std::function<void(DbHandles)>;

    DbLane(LaneSettings settings, std::string database_url);
    ~DbLane();
    DbLane(const DbLane&) = delete;
    DbLane& operator=(const DbLane&) = delete;

    // Queues `job`; false (and the job is dropped) when `capacity` jobs are queued already.
    [[nodiscard]] bool submit(Job job);

    // Runs `work(DbHandles)` on the lane, then `done(LaneResult<…>)` on `loop` if `owner`
    // (a util::Lifetime's watch) has not expired by then. What `work` throws becomes the
    // result's error. False when the lane is full: nothing runs, `done` is never called.
    template <typename Work, typename Done>
    [[nodiscard]] bool call(boost::asio::any_io_executor loop, std::weak_ptr<const void> owner,
                            Work work, Done done) {
        return submit([loop = std::move(loop), owner = std::move(owner), work = std::move(work),
                       done = std::move(done)](DbHandles db) mutable {
            LaneResult<LaneValue<Work>> result;
            try {
                if constexpr (std::is_void_v<std::invoke_result_t<Work&, DbHandles>>) {
                    work(db);
                } else {
                    result.value = work(db);
                }
            } catch (const std::exception& error) {
                result.error = *error.what() != '\0' ? error.what() : "unknown error";
            }
            boost::asio::post(loop, [owner = std::move(owner), done = std::move(done),
                                     result = std::move(result)]() mutable {
                if (!owner.expired()) done(std::move(result));
            });
        });
    }
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
