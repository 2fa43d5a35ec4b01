#pragma once

// Runs a test's Asio loop until a condition holds, instead of sleeping for a guess.

#include <chrono>
#include <functional>

#include <boost/asio/io_context.hpp>

namespace outboxd::test {

// Runs `ioc` in short slices until `done()` or `timeout`; returns whether `done()` held.
inline bool run_until(boost::asio::io_context& ioc, const std::function<bool()>& done,
                      std::chrono::milliseconds timeout = std::chrono::seconds{10}) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (!done()) {
        if (std::chrono::steady_clock::now() > deadline) return false;
        ioc.restart();
        ioc.run_for(std::chrono::milliseconds{5});
    }
    return true;
}

}  // namespace outboxd::test
