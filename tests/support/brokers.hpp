#pragma once

// Message brokers of a test's own, for multi-process tests: Debian's nats-server (JetStream,
// file storage) and rabbitmq-server, each a child process of the test on free 127.0.0.1
// ports below 32768, with every file of its own under the directory it is given (the
// command lines of broker_servers.hpp, which the benchmark starts too). They never
// use a system instance (5672, 4222, epmd 4369) and die with the test however it ends.
// Plus admin helpers that read what a broker stored, through the brokers' C clients
// (nats.c, rabbitmq-c): each call opens its own connection and closes it.
//
// Main thread only: a broker dies with the thread that started it (PR_SET_PDEATHSIG).
// Everything here throws std::runtime_error naming what failed (with the broker's log when
// it does not start, with the client's status text when a call fails).

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "outboxd/broker_admin/broker_admin.hpp"
#include "outboxd/broker_admin/broker_servers.hpp"
#include "process.hpp"

namespace outboxd::test {

// The brokers' administration (create_stream, declare_queue_bound, …), as the tests name it.
using broker_admin::create_stream;
using broker_admin::declare_exchange;
using broker_admin::declare_queue_bound;
using broker_admin::drain_queue;
using broker_admin::queue_messages;
using broker_admin::StoredMessage;
using broker_admin::stream_contents;
using broker_admin::stream_messages;

// How clients must authenticate to a NatsServer: nothing (the default), a user and password
// (--user/--pass), or a token (--auth). Not both.
using NatsAuth = broker_admin::NatsServerAuth;
using NatsTls = broker_admin::NatsServerTls;

// nats-server -js -sd <dir>/js -a 127.0.0.1 -p <port> -m <monitor port>.
class NatsServer {
public:
    // Starts the server and returns once it accepts clients and JetStream answers (/jsz).
    // With `tls`, every client must speak TLS: url() is tls://…, and the helpers below, which
    // do not, cannot reach it (readiness is then judged from /jsz and the port alone).
    explicit NatsServer(std::string dir, NatsAuth auth = {}, NatsTls tls = {});
    // Stops it (SIGTERM, then SIGKILL after a grace period).
    ~NatsServer();
    NatsServer(const NatsServer&) = delete;
    NatsServer& operator=(const NatsServer&) = delete;

    // nats://127.0.0.1:<port>, without credentials.
    [[nodiscard]] std::string url() const;
    // url() with the credentials of NatsAuth in it (nats://user:pass@… or nats://token@…):
    // what the helpers below and nats.c accept.
    [[nodiscard]] std::string client_url() const;
    [[nodiscard]] std::uint16_t port() const { return port_; }
    [[nodiscard]] std::uint16_t monitor_port() const { return monitor_port_; }
    [[nodiscard]] bool running();
    // SIGTERM (JetStream flushes and shuts down); returns once it exited.
    void stop();
    // SIGKILL: a crash. The file store recovers what reached its files on restart().
    void kill();
    // Stops it if running and starts it again on the same ports and store directory, so
    // streams and their messages survive; returns once it is ready again.
    void restart();
    [[nodiscard]] std::string log() const;

private:
    // Starts the server on port_ and monitor_port_; false when it exited before it was
    // ready (a port taken meanwhile), throws when it is not ready in time.
    bool start();
    [[nodiscard]] bool jetstream_ready() const;

    std::string dir_;
    NatsAuth auth_;
    NatsTls tls_;
    std::uint16_t port_ = 0;
    std::uint16_t monitor_port_ = 0;
    std::unique_ptr<Process> process_;
};

// A RabbitMQ node (rabbitmq-server in the foreground, no plugins) of its own: its AMQP port,
// distribution port and epmd (a child too, on its own port) on 127.0.0.1; node name
// rabbit-<port>@localhost; config, cookie, HOME, mnesia and logs under `dir`.
// The guest user may log in from 127.0.0.1 (RabbitMQ's default).
class RabbitMq {
public:
    // Starts epmd and the node; returns once the node accepts an AMQP login (a first start
    // takes several seconds; gives up after 60 s).
    // With `tls` (its files; the port is chosen here), an AMQPS listener too: tls_url().
    explicit RabbitMq(std::string dir, broker_admin::RabbitTls tls = {});
    // Stops the node (SIGTERM, then SIGKILL after a grace period) and its epmd.
    ~RabbitMq();
    RabbitMq(const RabbitMq&) = delete;
    RabbitMq& operator=(const RabbitMq&) = delete;

    // amqp://guest:guest@127.0.0.1:<port>/%2f
    [[nodiscard]] std::string url() const;
    // amqps://guest:guest@127.0.0.1:<TLS port>/%2f (with `tls` only).
    [[nodiscard]] std::string tls_url() const;
    [[nodiscard]] std::uint16_t port() const { return port_; }
    [[nodiscard]] bool running();
    // SIGTERM: a clean shutdown (queues and persistent messages written); returns once the
    // node exited. Its epmd keeps running for restart().
    void stop();
    // SIGKILL: a crash of the node.
    void kill();
    // Stops the node if running and starts it again on the same ports and mnesia directory:
    // durable queues and the persistent messages in them survive.
    void restart();
    [[nodiscard]] std::string log() const;

private:
    // Each false when the process exited before it was ready (a port taken meanwhile);
    // start_node() throws when the node is not ready in time.
    bool start_epmd();
    bool start_node();

    std::string dir_;
    broker_admin::RabbitTls tls_;
    std::uint16_t port_ = 0;
    std::uint16_t dist_port_ = 0;
    std::uint16_t epmd_port_ = 0;
    std::unique_ptr<Process> epmd_;
    std::unique_ptr<Process> node_;
};

}  // namespace outboxd::test
