#pragma once

// How to run a broker of one's own (nats-server, rabbitmq-server with its own epmd) as a
// child process on 127.0.0.1, every file of it under a directory it is given: the command
// lines and environments the tests (tests/support/brokers.cpp) and the benchmark
// (bench/broker_process.cpp) start, spelled once. Starting, waiting and stopping stay with
// the caller, whose process machinery differs.
//
// A broker started so never touches a system instance (ports 4222, 5672, epmd's 4369) nor
// /etc, /var/lib or $HOME. Every function throws std::runtime_error naming what failed: a
// broker not installed, a file it cannot write.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace outboxd::broker_admin {

// A process to start: argv[0] is the executable's absolute path; `env` goes on top of the
// caller's environment.
struct ServerCommand {
    std::vector<std::string> argv;
    std::map<std::string, std::string> env;
};

// `count` different ports on 127.0.0.1 free at the time of the call, in 20000..32767: below
// the kernel's ephemeral range, so that no outgoing connection takes one before the broker
// binds it. Another process still may: a caller retries a failed start on other ports.
[[nodiscard]] std::vector<std::uint16_t> free_ports(std::size_t count);
// Whether something accepts TCP connections on 127.0.0.1:`port` now.
[[nodiscard]] bool accepts_tcp(std::uint16_t port);

// How clients must authenticate to a nats-server: nothing, a user and password, or a token.
struct NatsServerAuth {
    std::string user;
    std::string password;
    std::string token;
    // nats-server configuration text (its own syntax) written beside the store and given with
    // -c: NKey users, or an operator and its accounts. With it, user/password/token are not
    // passed on the command line (which would override the file's authorization): they name
    // the login the file grants the helpers, if any.
    std::string config;
};

// A nats-server's TLS: its certificate and key (PEM files); none: plain TCP.
struct NatsServerTls {
    std::string cert_file;
    std::string key_file;
};

// nats-server -js -sd <dir>/js -a 127.0.0.1 -p <port> -m <monitor_port>, with --user/--pass
// or --auth from `auth` (or -c <dir>/server.conf holding auth.config), and TLS required of every
// client with `tls`; creates <dir>/js (file storage survives a restart on the same dir).
[[nodiscard]] ServerCommand nats_server_command(const std::string& dir, std::uint16_t port,
                                                std::uint16_t monitor_port,
                                                const NatsServerAuth& auth = {},
                                                const NatsServerTls& tls = {});
// nats://[user:password@ | token@]127.0.0.1:<port>: what nats.c and the admin calls take.
[[nodiscard]] std::string nats_url(std::uint16_t port, const NatsServerAuth& auth = {});

// epmd listening on 127.0.0.1:<port>, in the foreground.
[[nodiscard]] ServerCommand epmd_command(std::uint16_t port);
// Asks the epmd on <port> to exit (an epmd a RabbitMQ node started by itself, were its own
// gone, is no child of the caller's).
[[nodiscard]] ServerCommand epmd_kill_command(std::uint16_t port);

// A RabbitMQ node without plugins in the foreground: AMQP on 127.0.0.1:<amqp_port>,
// distribution on <dist_port>, the epmd of epmd_command(epmd_port) (start that first), node
// name rabbit-<amqp_port>@localhost; config, cookie, HOME, mnesia and logs under `dir`,
// whose files it writes (an existing cookie is kept, so that a restart on the same mnesia
// directory is the same node). The node itself is the process (no wrapper shell): SIGTERM
// stops it cleanly, SIGKILL kills it. The guest user may log in from 127.0.0.1.
// With `tls` (a port), an AMQPS listener too on 127.0.0.1:<tls.port>, presenting
// tls.cert_file and tls.key_file (PEM; clients' certificates not asked for).
struct RabbitTls {
    std::uint16_t port = 0;
    std::string cert_file;
    std::string key_file;
    std::string ca_file;  // the CA of cert_file
};
[[nodiscard]] ServerCommand rabbitmq_command(const std::string& dir, std::uint16_t amqp_port,
                                             std::uint16_t dist_port, std::uint16_t epmd_port,
                                             const RabbitTls& tls = {});
// amqp://guest:guest@127.0.0.1:<amqp_port>/%2f
[[nodiscard]] std::string rabbitmq_url(std::uint16_t amqp_port);

}  // namespace outboxd::broker_admin
