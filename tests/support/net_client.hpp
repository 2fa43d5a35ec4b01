#pragma once

// Minimal blocking HTTP and WebSocket clients for end-to-end tests (Boost.Beast).

#include <chrono>
#include <memory>
#include <optional>
#include <string>

namespace outboxd::test {

struct HttpResult {
    int status = 0;
    std::string body;
};

// One request on a fresh connection to 127.0.0.1:port. Throws on connection failure.
HttpResult http_call(std::uint16_t port, const std::string& method, const std::string& target,
                     const std::string& body = {}, const std::optional<std::string>& bearer = {});

// Sends raw bytes and returns whatever the server answers before closing (or timeout).
std::string raw_http(std::uint16_t port, const std::string& bytes);

class WsClient {
public:
    // Connects and upgrades; throws with the HTTP status in the message when refused.
    WsClient(std::uint16_t port, const std::string& target,
             const std::optional<std::string>& bearer = {}, std::size_t max_frame = 16 << 20);
    ~WsClient();

    void send(const std::string& text);
    void send_binary(const std::string& bytes);
    // Next text frame, or nullopt when the connection closed or `timeout` passed.
    std::optional<std::string> read(std::chrono::milliseconds timeout = std::chrono::seconds{5});
    // Reads until the connection closes; returns the close code (0 when none / timeout).
    int await_close(std::chrono::milliseconds timeout = std::chrono::seconds{5});
    [[nodiscard]] bool open() const;

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

// A TCP port on 127.0.0.1 that nothing listens on now, below the ephemeral range (20000 up
// to 32767, from a random start), for a program that must be told its port.
[[nodiscard]] std::uint16_t free_port();

// Parses the node's "event=listening … address=HOST:PORT" log line.
std::optional<std::uint16_t> listening_port(const std::string& log);

}  // namespace outboxd::test
