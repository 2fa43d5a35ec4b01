#pragma once

// One database's wakes (store/wake_listener.hpp), turned into the dispatcher's triggers on
// the loop. Internal to src/engine.
//
// A wake claims the routes it names at once, and once more shortly after: transactions that
// committed alongside the one that notified, into the same routes, skipped their own NOTIFY
// (migration 0007). A wake from the front (a resume, on any node) reads from the front of
// the index; one that names no route looks everywhere; the cancelled claims it names are
// told to their sinks.

#include <chrono>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

#include "outboxd/dispatch/dispatcher.hpp"
#include "outboxd/store/wake_listener.hpp"
#include "outboxd/util/lifetime.hpp"

namespace outboxd::engine {

class WakeRouter {
public:
    static constexpr std::chrono::milliseconds kFollowUp{3};

    // Listens on `database_url` of the database `database`; `task_id_suffix` is the
    // database's (cancelled claims come as bare "<id>.<token>").
    WakeRouter(const boost::asio::any_io_executor& loop, dispatch::Dispatcher& dispatcher,
               const std::string& database, const std::string& database_url,
               std::string task_id_suffix)
        : loop_(loop),
          dispatcher_(dispatcher),
          suffix_(std::move(task_id_suffix)),
          follow_up_timer_(loop),
          listener_(
              database_url,
              [this, watch = lifetime_.watch()](const store::WakeNotice& n) {
                  // From the listener's thread: onto the loop, while the router lives.
                  boost::asio::post(loop_, [this, watch, n] {
                      if (!watch.expired()) woken(n);
                  });
              },
              database) {}

private:
    void woken(store::WakeNotice notice) {
        if (!notice.cancelled.empty()) {
            if (!suffix_.empty()) {
                for (auto& id : notice.cancelled) id += suffix_;
            }
            dispatcher_.cancel_tasks(notice.cancelled);
        }
        if (notice.from_front) dispatcher_.claim_from_front();
        dispatcher_.woken(notice.routes, notice.anywhere);
        follow_up_.insert(follow_up_.end(), notice.routes.begin(), notice.routes.end());
        if (follow_up_armed_) return;
        follow_up_armed_ = true;
        follow_up_timer_.expires_after(kFollowUp);
        follow_up_timer_.async_wait([this, watch = lifetime_.watch()](auto ec) {
            if (watch.expired()) return;
            follow_up_armed_ = false;
            auto queues = std::exchange(follow_up_, {});
            if (!ec) dispatcher_.woken(queues, false);
        });
    }

    boost::asio::any_io_executor loop_;
    dispatch::Dispatcher& dispatcher_;
    std::string suffix_;
    boost::asio::steady_timer follow_up_timer_;
    bool follow_up_armed_ = false;
    std::vector<std::pair<std::string, std::string>> follow_up_;  // woken since it was armed
    util::Lifetime lifetime_;
    // Last: its thread stops (in its destructor) before anything it posts to goes.
    store::WakeListener listener_;
};

}  // namespace outboxd::engine
