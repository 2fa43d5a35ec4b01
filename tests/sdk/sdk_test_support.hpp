#pragma once

// Shared bits of the SDK tests: options tuned for fast tests, and a handler that keeps the
// Responders it is given so that a test decides when (and from which thread) to answer.

#include <chrono>
#include <mutex>
#include <string>
#include <vector>

#include "outboxd/sdk/worker_client.hpp"

namespace outboxd::sdk::testing {

inline WorkerOptions test_options(std::vector<std::string> seed_urls) {
    WorkerOptions options;
    options.seed_urls = std::move(seed_urls);
    options.worker_id = "worker-under-test";
    options.activity_types = {"echo"};
    options.max_in_flight = 4;
    options.reconnect_min = std::chrono::milliseconds{20};
    options.reconnect_max = std::chrono::milliseconds{200};
    return options;
}

class HeldTasks {
public:
    TaskHandler handler() {
        return [this](const worker::protocol::Task& task, Responder responder) {
            const std::lock_guard lock{mutex_};
            tasks_.push_back(task);
            responders_.push_back(std::move(responder));
        };
    }

    [[nodiscard]] std::size_t size() const {
        const std::lock_guard lock{mutex_};
        return responders_.size();
    }

    [[nodiscard]] worker::protocol::Task task(std::size_t index) const {
        const std::lock_guard lock{mutex_};
        return tasks_.at(index);
    }

    // Responders are answered outside the lock: complete() posts to the client's thread.
    [[nodiscard]] Responder take(std::size_t index) {
        const std::lock_guard lock{mutex_};
        return std::move(responders_.at(index));
    }

private:
    mutable std::mutex mutex_;
    std::vector<worker::protocol::Task> tasks_;
    std::vector<Responder> responders_;
};

}  // namespace outboxd::sdk::testing
