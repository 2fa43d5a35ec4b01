#pragma once

// Polls `ready()` every 20 ms until it holds; `check()` (which throws when a process it
// watches died) runs between polls. Throws std::runtime_error "<scenario>: <what>" after
// `timeout`.

#include <chrono>
#include <stdexcept>
#include <string>
#include <thread>

namespace outboxd::bench {

template <typename Ready, typename Check>
void wait_for(const std::string& scenario, const std::string& what, Ready ready, Check check,
              std::chrono::seconds timeout = std::chrono::seconds{30}) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (!ready()) {
        check();
        if (std::chrono::steady_clock::now() > deadline) {
            std::string message{scenario};
            message.append(": ").append(what);
            throw std::runtime_error{message};
        }
        std::this_thread::sleep_for(std::chrono::milliseconds{20});
    }
}

}  // namespace outboxd::bench
