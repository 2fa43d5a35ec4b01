#pragma once

// A task run every `period` on the loop until stop() or destruction. A task that throws is
// counted on `faults`, logged, and runs again next period: one bad tick never ends it.
//
// Thread affinity: the loop thread.

#include <chrono>
#include <functional>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/steady_timer.hpp>

#include "outboxd/util/lifetime.hpp"

namespace prometheus {
class Counter;
}

namespace outboxd::util {

class Periodic {
public:
    Periodic(const boost::asio::any_io_executor& loop, std::chrono::milliseconds period,
             std::function<void()> task, prometheus::Counter& faults);
    Periodic(const Periodic&) = delete;
    Periodic& operator=(const Periodic&) = delete;

    // Runs the task first one period from now.
    void start();
    void stop();

private:
    void arm();

    boost::asio::steady_timer timer_;
    std::chrono::milliseconds period_;
    std::function<void()> task_;
    prometheus::Counter& faults_;
    bool running_ = false;
    util::Lifetime lifetime_;
};

}  // namespace outboxd::util
