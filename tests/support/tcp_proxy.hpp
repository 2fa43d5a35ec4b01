#pragma once

// A TCP relay on 127.0.0.1 in front of another local port, which a test can cut (every
// connection dropped, new ones refused) and restore: a network partition between one node
// and PostgreSQL, without touching the others.

#include <cstdint>
#include <memory>

namespace outboxd::test {

class TcpProxy {
public:
    explicit TcpProxy(std::uint16_t target_port);
    ~TcpProxy();
    TcpProxy(const TcpProxy&) = delete;
    TcpProxy& operator=(const TcpProxy&) = delete;

    [[nodiscard]] std::uint16_t port() const;
    void cut();      // drop every relayed connection and stop accepting
    void restore();  // accept again, on the same port

    struct Impl;

private:
    std::shared_ptr<Impl> impl_;
};

}  // namespace outboxd::test
