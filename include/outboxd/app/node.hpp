#pragma once

// Wiring of one outboxd node: database lanes, cluster membership, dispatcher, HTTP and
// WebSocket server, wake listener, signals. Owns the loop thread's io_context.

#include <atomic>
#include <cstdint>
#include <memory>

#include "outboxd/config/config.hpp"

namespace outboxd::app {

class Node {
public:
    // Applies migrations when configured to (retrying while the database comes up) and
    // binds the listening port. Throws std::runtime_error with a clear message on failure.
    explicit Node(config::Config config);
    ~Node();

    // Runs the loop on the calling thread until SIGTERM/SIGINT (when `handle_signals`) or
    // request_stop(), draining gracefully. Returns the process exit code.
    int run(bool handle_signals = true);
    // Thread-safe: begins the graceful drain.
    void request_stop();
    [[nodiscard]] std::uint16_t port() const;

private:
    class Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace outboxd::app
