#include "outboxd/util/periodic.hpp"

#include <prometheus/counter.h>
#include <spdlog/spdlog.h>

#include "outboxd/util/untrusted_text.hpp"

namespace outboxd::util {

Periodic::Periodic(const boost::asio::any_io_executor& loop, std::chrono::milliseconds period,
                   std::function<void()> task, prometheus::Counter& faults)
    : timer_(loop), period_(period), task_(std::move(task)), faults_(faults) {}

void Periodic::start() {
    running_ = true;
    arm();
}

void Periodic::stop() {
    running_ = false;
    timer_.cancel();
}

void Periodic::arm() {
    timer_.expires_after(period_);
    timer_.async_wait([this, watch = lifetime_.watch()](auto ec) {
        if (ec || watch.expired() || !running_) return;
        try {
            task_();
        } catch (const std::exception& error) {
            faults_.Increment();
            spdlog::error("event=fault where=timer error=\"{}\"", util::log_safe(error.what()));
        }
        if (running_) arm();
    });
}

}  // namespace outboxd::util
