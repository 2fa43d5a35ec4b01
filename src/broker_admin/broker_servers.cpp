#include "outboxd/broker_admin/broker_servers.hpp"

#include <filesystem>
#include <fstream>
#include <random>
#include <stdexcept>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

namespace outboxd::broker_admin {
namespace {

namespace fs = std::filesystem;

constexpr std::uint16_t kFirstPort = 20000;
constexpr std::uint16_t kLastPort = 32767;

// The plain rabbitmq-server script: Debian's /usr/sbin/rabbitmq-server is a wrapper that
// switches to the rabbitmq user (su) and sends the output to /var/log/rabbitmq.
const std::vector<std::string> kNatsBinaries{"/usr/sbin/nats-server", "/usr/bin/nats-server"};
const std::vector<std::string> kRabbitBinaries{"/usr/lib/rabbitmq/bin/rabbitmq-server"};
const std::vector<std::string> kEpmdBinaries{"/usr/bin/epmd", "/usr/lib/erlang/bin/epmd"};

std::string find_binary(const std::vector<std::string>& candidates, const std::string& package) {
    for (const auto& path : candidates) {
        if (fs::exists(path)) return path;
    }
    throw std::runtime_error(package + " not installed (looked for " + candidates.front() + ")");
}

void write_file(const std::string& path, const std::string& text) {
    std::ofstream out{path, std::ios::trunc};
    out << text;
    if (!out) throw std::runtime_error("cannot write " + path);
}

// A socket bound to 127.0.0.1:`port` and closed again: whether the port was free.
bool bindable(std::uint16_t port) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return false;
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(port);
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    const bool bound = ::bind(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) == 0;
    ::close(fd);
    return bound;
}

}  // namespace

std::vector<std::uint16_t> free_ports(std::size_t count) {
    thread_local std::mt19937 random{std::random_device{}()};
    constexpr int kSpan = kLastPort - kFirstPort + 1;
    std::vector<std::uint16_t> ports;
    // From a random start, so that callers running at once seldom pick the same ones.
    const int start = std::uniform_int_distribution<int>{0, kSpan - 1}(random);
    for (int i = 0; i < kSpan && ports.size() < count; ++i) {
        const auto port = static_cast<std::uint16_t>(kFirstPort + (start + i) % kSpan);
        if (bindable(port)) ports.push_back(port);
    }
    if (ports.size() < count) {
        throw std::runtime_error("fewer than " + std::to_string(count) + " free ports between " +
                                 std::to_string(kFirstPort) + " and " + std::to_string(kLastPort));
    }
    return ports;
}

bool accepts_tcp(std::uint16_t port) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return false;
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(port);
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    const bool connected =
        ::connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) == 0;
    ::close(fd);
    return connected;
}

ServerCommand nats_server_command(const std::string& dir, std::uint16_t port,
                                  std::uint16_t monitor_port, const NatsServerAuth& auth,
                                  const NatsServerTls& tls) {
    if (!auth.token.empty() && !auth.user.empty()) {
        throw std::runtime_error("nats-server: a token or a user, not both");
    }
    fs::create_directories(dir + "/js");
    ServerCommand command;
    command.argv = {find_binary(kNatsBinaries, "nats-server"),
                    "-js",
                    "-sd",
                    dir + "/js",
                    "-a",
                    "127.0.0.1",
                    "-p",
                    std::to_string(port),
                    "-m",
                    std::to_string(monitor_port)};
    if (!auth.config.empty()) {
        const auto path = dir + "/server.conf";
        std::ofstream file{path, std::ios::trunc};
        file << auth.config;
        if (!file) throw std::runtime_error("nats-server: cannot write " + path);
        command.argv.insert(command.argv.end(), {"-c", path});
    } else if (!auth.user.empty()) {
        command.argv.insert(command.argv.end(), {"--user", auth.user, "--pass", auth.password});
    } else if (!auth.token.empty()) {
        command.argv.insert(command.argv.end(), {"--auth", auth.token});
    }
    if (!tls.cert_file.empty()) {
        command.argv.insert(command.argv.end(),
                            {"--tls", "--tlscert", tls.cert_file, "--tlskey", tls.key_file});
    }
    return command;
}

std::string nats_url(std::uint16_t port, const NatsServerAuth& auth) {
    std::string credentials;
    if (!auth.token.empty()) credentials = auth.token + "@";
    if (!auth.user.empty()) credentials = auth.user + ":" + auth.password + "@";
    return "nats://" + credentials + "127.0.0.1:" + std::to_string(port);
}

ServerCommand epmd_command(std::uint16_t port) {
    return {{find_binary(kEpmdBinaries, "erlang-base (epmd)"), "-port", std::to_string(port),
             "-address", "127.0.0.1"},
            {}};
}

ServerCommand epmd_kill_command(std::uint16_t port) {
    return {
        {find_binary(kEpmdBinaries, "erlang-base (epmd)"), "-port", std::to_string(port), "-kill"},
        {}};
}

ServerCommand rabbitmq_command(const std::string& dir, std::uint16_t amqp_port,
                               std::uint16_t dist_port, std::uint16_t epmd_port,
                               const RabbitTls& tls) {
    const auto binary = find_binary(kRabbitBinaries, "rabbitmq-server");
    for (const char* sub : {"/home", "/mnesia", "/log"}) fs::create_directories(dir + sub);
    // The Erlang cookie must be readable by its owner only, or the VM refuses it.
    const auto cookie = dir + "/home/.erlang.cookie";
    if (!fs::exists(cookie)) {
        write_file(cookie,
                   "outboxd-" + std::to_string(::getpid()) + "-" + std::to_string(amqp_port));
        ::chmod(cookie.c_str(), S_IRUSR);
    }
    write_file(dir + "/enabled_plugins", "[].\n");
    // Stands in for /etc/rabbitmq/rabbitmq-env.conf, which the server script would read.
    write_file(dir + "/rabbitmq-env.conf", "");
    // CI disks may be nearly full: the default 50 MB limit would block publishers.
    std::string config = "disk_free_limit.absolute = 10MB\n";
    if (tls.port != 0) {
        config += "listeners.ssl.1 = 127.0.0.1:" + std::to_string(tls.port) +
                  "\nssl_options.cacertfile = " + tls.ca_file +
                  "\nssl_options.certfile = " + tls.cert_file +
                  "\nssl_options.keyfile = " + tls.key_file +
                  "\nssl_options.verify = verify_none\nssl_options.fail_if_no_peer_cert = false\n";
    }
    write_file(dir + "/rabbitmq.conf", config);
    ServerCommand command;
    command.argv = {binary};
    command.env = {
        {"HOME", dir + "/home"},
        {"RABBITMQ_CONF_ENV_FILE", dir + "/rabbitmq-env.conf"},
        {"RABBITMQ_CONFIG_FILE", dir + "/rabbitmq.conf"},
        {"RABBITMQ_ADVANCED_CONFIG_FILE", dir + "/advanced.config"},
        {"RABBITMQ_ENABLED_PLUGINS_FILE", dir + "/enabled_plugins"},
        {"RABBITMQ_MNESIA_BASE", dir + "/mnesia"},
        {"RABBITMQ_LOG_BASE", dir + "/log"},
        {"RABBITMQ_LOGS", "-"},  // to standard output, the caller's log file
        {"RABBITMQ_NODENAME", "rabbit-" + std::to_string(amqp_port) + "@localhost"},
        {"RABBITMQ_NODE_IP_ADDRESS", "127.0.0.1"},
        {"RABBITMQ_NODE_PORT", std::to_string(amqp_port)},
        {"RABBITMQ_DIST_PORT", std::to_string(dist_port)},
        {"ERL_EPMD_PORT", std::to_string(epmd_port)},
        {"ERL_CRASH_DUMP", dir + "/erl_crash.dump"},
        // Idle schedulers sleep instead of spinning: the node shares the cores with the
        // processes it serves.
        {"RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS", "+sbwt none +sbwtdcpu none +sbwtdio none"},
        // The script then execs the VM instead of running it in the background behind a
        // shell that traps signals: the child is the node itself, SIGTERM stops it cleanly,
        // SIGKILL really kills it, and a parent-death signal reaches it.
        {"RUNNING_UNDER_SYSTEMD", "true"},
    };
    return command;
}

std::string rabbitmq_url(std::uint16_t amqp_port) {
    return "amqp://guest:guest@127.0.0.1:" + std::to_string(amqp_port) + "/%2f";
}

}  // namespace outboxd::broker_admin
