#pragma once

// A real outboxd-receiver process (the HTTP push endpoint) for end-to-end tests.

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "process.hpp"

namespace outboxd::test {

// One line of the receiver's --log.
struct ReceivedRequest {
    std::int64_t epoch_ms = 0;
    std::string dispatch_key;  // as the header carried it
    int attempt = 0;
    int status = 0;
    int concurrent = 0;  // requests in progress when it arrived, itself included
    int delivery = 0;    // Outboxd-Delivery
};

class Receiver {
public:
    // Starts outboxd-receiver with `flags` on `port` (0: a free one) and waits until it
    // listens. Every request is logged (requests()).
    Receiver(const std::string& dir, const std::string& name, std::vector<std::string> flags,
             std::uint16_t port = 0);

    [[nodiscard]] std::uint16_t port() const { return port_; }
    [[nodiscard]] std::string url(const std::string& path = "/hook") const;
    // GET /stats.
    [[nodiscard]] nlohmann::json stats() const;
    [[nodiscard]] std::vector<ReceivedRequest> requests() const;
    void kill();
    // Starts it again on the same port, with the same flags.
    void restart();

private:
    void start();

    std::string dir_;
    std::string name_;
    std::vector<std::string> flags_;
    std::uint16_t port_ = 0;
    int starts_ = 0;
    std::unique_ptr<Process> process_;
};

}  // namespace outboxd::test
