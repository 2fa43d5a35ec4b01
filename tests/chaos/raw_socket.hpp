#pragma once

// A plain blocking TCP connection to 127.0.0.1 with deadlines on every call, for sending
// bytes no well-behaved client library would send. Never throws: a peer that resets or
// closes is part of what is being tested.

#include <chrono>
#include <cstdint>
#include <string>

namespace outboxd::chaos {

class RawSocket {
public:
    RawSocket(std::uint16_t port, std::chrono::milliseconds timeout);
    ~RawSocket();
    RawSocket(const RawSocket&) = delete;
    RawSocket& operator=(const RawSocket&) = delete;

    [[nodiscard]] bool connected() const { return fd_ >= 0; }
    // Sends as much of `bytes` as the peer takes before `timeout`; false when cut short.
    bool send(const std::string& bytes, std::chrono::milliseconds timeout);
    // Appends what arrives within `timeout` to `out`; false once the peer closed or failed.
    bool receive(std::string& out, std::chrono::milliseconds timeout);
    // Reads until `out` holds `marker` or `timeout` passes.
    bool receive_until(std::string& out, const std::string& marker,
                       std::chrono::milliseconds timeout);

private:
    int fd_ = -1;
};

// Whether the node on `port` answers GET /healthz with 200 within `timeout`: alive, and
// not wedged.
[[nodiscard]] bool answers_health(std::uint16_t port, std::chrono::milliseconds timeout);

}  // namespace outboxd::chaos
