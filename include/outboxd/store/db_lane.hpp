#pragma once

// A database thread: owns its connections (libpqxx connections are single-threaded) and
// runs submitted jobs in order. Keeps blocking SQL off the network loop: the loop calls a
// job on the lane with call(), and its result (or the error it threw) comes back to the
// loop, to the owner that asked, while that owner lives.
//
// A lane serves one consumer, and a job gets that consumer's stores only (`Stores`, see
// store/lanes.hpp): a claims lane's jobs can claim, and nothing else. The stores are made
// on the lane's own thread and connect on first use.
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
#include <exception>
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

#include "outboxd/store/outbox_session.hpp"

namespace prometheus {
class Counter;
}
namespace outboxd::util {
class SecretBox;
}

namespace outboxd::store {

struct LaneSettings {
    std::string name;
    // Applies to the lane's outbox session (relaxed only for the claims lanes).
    OutboxSession::Commits commits = OutboxSession::Commits::durable;
    // Server-side limit of every statement of the lane's outbox session (0: none).
    std::chrono::milliseconds statement_timeout{0};
    std::size_t capacity = 64;
    // A lane with nothing to do this long closes its connection (0: never); the next job
    // connects again. Keeps a quiet database cheap (README, "Several databases").
    std::chrono::milliseconds idle_close{0};
    prometheus::Counter* rejected = nullptr;  // counts refused submissions, when set
    // The keys of the secrets its stores keep (HTTP targets'); none: kept in clear.
    std::shared_ptr<const util::SecretBox> secrets = nullptr;
};

// What a lane's stores are made from, on its thread.
struct LaneConnection {
    std::string database_url;
    OutboxSession::Commits commits = OutboxSession::Commits::durable;
    std::chrono::milliseconds statement_timeout{0};
    std::shared_ptr<const util::SecretBox> secrets = nullptr;
};

// What a job called on a lane gave back: its value, or the error it threw (then `value` is
// value-initialised). A job that returns nothing gives a std::monostate.
template <typename T>
struct LaneResult {
    T value{};
    std::string error;  // empty: the job returned

    [[nodiscard]] bool ok() const { return error.empty(); }
};

template <typename Work, typename Stores>
using LaneValue = std::conditional_t<std::is_void_v<std::invoke_result_t<Work&, Stores&>>,
                                     std::monostate, std::invoke_result_t<Work&, Stores&>>;

// The thread and its bounded queue, whatever the stores.
class LaneThread {
public:
    using Task = std::function<void()>;

    explicit LaneThread(LaneSettings settings) : settings_(std::move(settings)) {}
    ~LaneThread() { join(); }
    LaneThread(const LaneThread&) = delete;
    LaneThread& operator=(const LaneThread&) = delete;

    [[nodiscard]] bool push(Task task);
    [[nodiscard]] std::size_t queued() const;
    [[nodiscard]] const std::string& name() const { return settings_.name; }
    [[nodiscard]] const LaneSettings& settings() const { return settings_; }

protected:
    // Runs `body` on the lane's thread, which calls run_queue() until it returns.
    void start(std::function<void()> body);
    // Runs the queued tasks in order until the lane stops and the queue is empty; `idle`
    // once the lane had nothing to do for settings().idle_close (when set), until the next task.
    void run_queue(const std::function<void()>& idle = {});
    void join();

private:
    LaneSettings settings_;
    mutable std::mutex mutex_;
    std::condition_variable ready_;
    std::deque<Task> tasks_;
    bool stopping_ = false;
    std::thread thread_;
};

template <typename Stores>
class DbLane : public LaneThread {
public:
    using Job = std::function<void(Stores&)>;

    DbLane(LaneSettings settings, std::string database_url) : LaneThread(std::move(settings)) {
        start([this, connection = LaneConnection{std::move(database_url), this->settings().commits,
                                                 this->settings().statement_timeout,
                                                 this->settings().secrets}] {
            Stores stores{connection};
            stores_ = &stores;
            if constexpr (requires { stores.session.disconnect(); }) {
                run_queue([&stores] { stores.session.disconnect(); });
            } else {
                run_queue();
            }
            stores_ = nullptr;
        });
    }
    ~DbLane() { join(); }

    // Queues `job`; false (and the job is dropped) when `capacity` jobs are queued already.
    [[nodiscard]] bool submit(Job job) {
        return push([this, job = std::move(job)] { job(*stores_); });
    }

    // Runs `work(Stores&)` on the lane, then `done(LaneResult<…>)` on `loop` if `owner`
    // (a util::Lifetime's watch) has not expired by then. What `work` throws becomes the
    // result's error. False when the lane is full: nothing runs, `done` is never called.
    template <typename Work, typename Done>
    [[nodiscard]] bool call(boost::asio::any_io_executor loop, std::weak_ptr<const void> owner,
                            Work work, Done done) {
        return submit([loop = std::move(loop), owner = std::move(owner), work = std::move(work),
                       done = std::move(done)](Stores& db) mutable {
            LaneResult<LaneValue<Work, Stores>> result;
            try {
                if constexpr (std::is_void_v<std::invoke_result_t<Work&, Stores&>>) {
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

private:
    Stores* stores_ = nullptr;  // the lane thread's own, while it runs
};

}  // namespace outboxd::store
