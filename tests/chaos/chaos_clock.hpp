#pragma once

// Time as every part of a chaos run records it: unix milliseconds of the wall clock, which
// the harness, the workers' delivery logs and PostgreSQL's clock_timestamp() share on one
// machine.

#include <chrono>
#include <cstdint>
#include <functional>
#include <thread>

namespace outboxd::chaos {

[[nodiscard]] inline std::int64_t unix_ms() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
}

// Polls `done` every 50 ms until it holds or `timeout` passes.
inline bool await_condition(const std::function<bool()>& done, std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (!done()) {
        if (std::chrono::steady_clock::now() > deadline) return false;
        std::this_thread::sleep_for(std::chrono::milliseconds{50});
    }
    return true;
}

}  // namespace outboxd::chaos
