#pragma once

// The out-of-process workers of a chaos run: outboxd-worker processes seeded with every
// node's URL, running sleep tasks, each incarnation with its own delivery log. A killed
// worker is replaced by a new incarnation (new id, new log), as a supervisor would.
//
// Main thread only (children die with the thread that spawned them).

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "process.hpp"

namespace outboxd::chaos {

struct WorkerPoolSettings {
    std::string bin_dir;
    std::string log_dir;
    std::vector<std::string> node_urls;
    int count = 3;
    int max_in_flight = 32;
};

class WorkerPool {
public:
    explicit WorkerPool(WorkerPoolSettings settings);
    WorkerPool(const WorkerPool&) = delete;
    WorkerPool& operator=(const WorkerPool&) = delete;

    void start_all();
    [[nodiscard]] std::size_t size() const { return slots_.size(); }
    [[nodiscard]] std::string name(std::size_t i) const;
    // Tasks worker i has received and not answered yet, from its delivery log.
    [[nodiscard]] std::size_t in_flight(std::size_t i) const;
    // SIGKILL worker i (expected).
    void kill(std::size_t i);
    // Starts a new incarnation in slot i.
    void replace(std::size_t i);
    // Reaps workers that exited on their own: recorded, then replaced.
    void poll();
    // SIGTERM every worker and waits for it.
    void stop_all(std::chrono::milliseconds timeout);

    // Every delivery log written so far, one per incarnation.
    [[nodiscard]] const std::vector<std::string>& delivery_logs() const { return logs_; }
    [[nodiscard]] int unexpected_exits() const { return unexpected_; }

private:
    struct Slot {
        std::unique_ptr<test::Process> process;
        int generation = 0;
        std::string delivery_log;
    };

    void launch(std::size_t i);

    WorkerPoolSettings settings_;
    std::vector<Slot> slots_;
    std::vector<std::string> logs_;
    int unexpected_ = 0;
};

}  // namespace outboxd::chaos
