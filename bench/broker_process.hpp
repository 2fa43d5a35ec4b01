#pragma once

// Brokers of the benchmark's own, as child processes (ChildProcess: they die with the driver),
// on free 127.0.0.1 ports below 32768, every file under the directory each is given; the
// command lines come from the broker_admin library (broker_servers.hpp), as the tests' do.
// Each constructor returns once its broker takes clients, and throws std::runtime_error
// (with the broker's log) when it does not start; the destructor stops it. Driver thread only.

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>

#include "child_process.hpp"

namespace outboxd::bench {

// nats-server with JetStream (file storage), no authentication.
class NatsProcess {
public:
    explicit NatsProcess(std::string dir);
    NatsProcess(const NatsProcess&) = delete;
    NatsProcess& operator=(const NatsProcess&) = delete;
    ~NatsProcess();

    // nats://127.0.0.1:PORT
    [[nodiscard]] const std::string& url() const { return url_; }
    [[nodiscard]] pid_t pid() const { return server_->pid(); }

private:
    // False when the server exited before it took clients (a port taken meanwhile).
    bool start();

    std::string dir_;
    std::string url_;
    std::unique_ptr<ChildProcess> server_;
};

// A RabbitMQ node and its own epmd; the guest user logs in from 127.0.0.1. A first start
// takes about 8 s.
class RabbitMqProcess {
public:
    explicit RabbitMqProcess(std::string dir);
    RabbitMqProcess(const RabbitMqProcess&) = delete;
    RabbitMqProcess& operator=(const RabbitMqProcess&) = delete;
    // Stops the node, then its epmd, and an epmd the node started by itself were its own gone.
    ~RabbitMqProcess();

    // amqp://guest:guest@127.0.0.1:PORT/%2f
    [[nodiscard]] const std::string& url() const { return url_; }
    [[nodiscard]] pid_t pid() const { return node_->pid(); }

private:
    // False when epmd or the node exited before it was ready (a port taken meanwhile).
    bool start();
    void stop();

    std::string dir_;
    std::string url_;
    std::uint16_t epmd_port_ = 0;
    std::unique_ptr<ChildProcess> epmd_;
    std::unique_ptr<ChildProcess> node_;
};

}  // namespace outboxd::bench
