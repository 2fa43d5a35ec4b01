#include "brokers.hpp"

#include <algorithm>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <nlohmann/json.hpp>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "net_client.hpp"

namespace outboxd::test {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

constexpr auto kNatsStartTimeout = 20s;
// A first start initialises mnesia and takes 5–10 s on two loaded cores.
constexpr auto kRabbitStartTimeout = 60s;
constexpr auto kEpmdStartTimeout = 10s;
// A clean stop: nats-server takes milliseconds, RabbitMQ about 3 s.
constexpr auto kStopTimeout = 30s;
constexpr auto kPollInterval = 100ms;
// A port found free may be taken before the broker binds it: try again on others. A failed
// RabbitMQ start costs seconds, hence fewer attempts.
constexpr int kNatsPortAttempts = 10;
constexpr int kRabbitPortAttempts = 3;

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

std::string read_file(const std::string& path) {
    std::ifstream in{path};
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
}

void write_file(const std::string& path, const std::string& text) {
    std::ofstream out{path, std::ios::trunc};
    out << text;
    if (!out) throw std::runtime_error("cannot write " + path);
}

// `count` different free ports (free_port() may return one twice).
std::vector<std::uint16_t> free_ports(std::size_t count) {
    std::vector<std::uint16_t> ports;
    while (ports.size() < count) {
        const auto port = free_port();
        if (std::find(ports.begin(), ports.end(), port) == ports.end()) ports.push_back(port);
    }
    return ports;
}

bool accepts_tcp(std::uint16_t port) {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
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

// SIGTERM, then SIGKILL when it does not exit within kStopTimeout.
void stop_process(Process& process) {
    if (!process.running()) return;
    process.signal(SIGTERM);
    if (!process.wait(kStopTimeout)) {
        process.signal(SIGKILL);
        process.wait(kStopTimeout);
    }
}

void kill_process(Process& process) {
    if (!process.running()) return;
    process.signal(SIGKILL);
    process.wait(kStopTimeout);
}

}  // namespace

// ---- NatsServer ----

NatsServer::NatsServer(std::string dir, NatsAuth auth)
    : dir_(std::move(dir)), auth_(std::move(auth)) {
    if (!auth_.token.empty() && !auth_.user.empty()) {
        throw std::runtime_error("NatsServer: a token or a user, not both");
    }
    binary_ = find_binary(kNatsBinaries, "nats-server");
    fs::create_directories(dir_ + "/js");
    for (int attempt = 1;; ++attempt) {
        const auto ports = free_ports(2);
        port_ = ports[0];
        monitor_port_ = ports[1];
        if (start()) return;
        if (attempt == kNatsPortAttempts) {
            throw std::runtime_error("nats-server did not start:\n" + log());
        }
    }
}

NatsServer::~NatsServer() {
    if (process_) stop_process(*process_);
}

std::string NatsServer::url() const { return "nats://127.0.0.1:" + std::to_string(port_); }

std::string NatsServer::client_url() const {
    std::string credentials;
    if (!auth_.token.empty()) credentials = auth_.token + "@";
    if (!auth_.user.empty()) credentials = auth_.user + ":" + auth_.password + "@";
    return "nats://" + credentials + "127.0.0.1:" + std::to_string(port_);
}

bool NatsServer::running() { return process_ && process_->running(); }

void NatsServer::stop() {
    if (process_) stop_process(*process_);
}

void NatsServer::kill() {
    if (process_) kill_process(*process_);
}

void NatsServer::restart() {
    stop();
    if (!start()) {
        throw std::runtime_error("nats-server did not start again on port " +
                                 std::to_string(port_) + ":\n" + log());
    }
}

std::string NatsServer::log() const { return read_file(dir_ + "/nats-server.log"); }

bool NatsServer::start() {
    std::vector<std::string> argv{binary_, "-js",
                                  "-sd",   dir_ + "/js",
                                  "-a",    "127.0.0.1",
                                  "-p",    std::to_string(port_),
                                  "-m",    std::to_string(monitor_port_)};
    if (!auth_.user.empty()) {
        argv.insert(argv.end(), {"--user", auth_.user, "--pass", auth_.password});
    }
    if (!auth_.token.empty()) argv.insert(argv.end(), {"--auth", auth_.token});
    process_ = std::make_unique<Process>(std::move(argv), std::map<std::string, std::string>{},
                                         dir_ + "/nats-server.log");
    const auto deadline = std::chrono::steady_clock::now() + kNatsStartTimeout;
    while (std::chrono::steady_clock::now() < deadline) {
        // Exited: most likely one of its ports was taken meanwhile.
        if (!process_->running()) return false;
        if (jetstream_ready()) return true;
        std::this_thread::sleep_for(kPollInterval / 2);
    }
    throw std::runtime_error("nats-server not ready after " +
                             std::to_string(kNatsStartTimeout.count()) + " s:\n" + log());
}

bool NatsServer::jetstream_ready() const {
    try {
        const auto answer = http_call(monitor_port_, "GET", "/jsz");
        if (answer.status != 200) return false;
        const auto jsz = nlohmann::json::parse(answer.body);
        if (jsz.value("disabled", false) || !jsz.contains("config")) return false;
        // The client port too, with the configured credentials.
        broker_admin::nats_ping(client_url());
        return true;
    } catch (const std::exception&) {
        return false;
    }
}

// ---- RabbitMq ----

RabbitMq::RabbitMq(std::string dir) : dir_(std::move(dir)) {
    binary_ = find_binary(kRabbitBinaries, "rabbitmq-server");
    epmd_binary_ = find_binary(kEpmdBinaries, "erlang-base (epmd)");
    for (const char* sub : {"/home", "/mnesia", "/log"}) fs::create_directories(dir_ + sub);
    for (int attempt = 1;; ++attempt) {
        const auto ports = free_ports(3);
        port_ = ports[0];
        dist_port_ = ports[1];
        epmd_port_ = ports[2];
        write_files();
        if (start_epmd() && start_node()) return;
        if (node_) kill_process(*node_);
        epmd_.reset();
        if (attempt == kRabbitPortAttempts) {
            throw std::runtime_error("rabbitmq-server did not start:\n" + log());
        }
    }
}

RabbitMq::~RabbitMq() {
    if (node_) stop_process(*node_);
    epmd_.reset();  // SIGKILL: it holds nothing worth a clean stop
    // An epmd the node started on its own (were ours gone): end it too, so that none
    // outlives the test.
    if (epmd_port_ != 0 && accepts_tcp(epmd_port_)) {
        Process kill_epmd{
            {epmd_binary_, "-port", std::to_string(epmd_port_), "-kill"}, {}, dir_ + "/epmd.log"};
        kill_epmd.wait(kStopTimeout);
    }
}

std::string RabbitMq::url() const {
    return "amqp://guest:guest@127.0.0.1:" + std::to_string(port_) + "/%2f";
}

bool RabbitMq::running() { return node_ && node_->running(); }

void RabbitMq::stop() {
    if (node_) stop_process(*node_);
}

void RabbitMq::kill() {
    if (node_) kill_process(*node_);
}

void RabbitMq::restart() {
    stop();
    if (!epmd_->running() && !start_epmd()) {
        throw std::runtime_error("epmd did not start again on port " + std::to_string(epmd_port_));
    }
    if (!start_node()) {
        throw std::runtime_error("rabbitmq-server did not start again on port " +
                                 std::to_string(port_) + ":\n" + log());
    }
}

std::string RabbitMq::log() const {
    return read_file(dir_ + "/rabbitmq.log") + read_file(dir_ + "/epmd.log");
}

void RabbitMq::write_files() const {
    // The Erlang cookie must be readable by its owner only, or the VM refuses it.
    const auto cookie = dir_ + "/home/.erlang.cookie";
    if (!fs::exists(cookie)) {
        write_file(cookie,
                   "outboxd-test-" + std::to_string(::getpid()) + "-" + std::to_string(port_));
        ::chmod(cookie.c_str(), S_IRUSR);
    }
    write_file(dir_ + "/enabled_plugins", "[].\n");
    // Stands in for /etc/rabbitmq/rabbitmq-env.conf, which the server script would read.
    write_file(dir_ + "/rabbitmq-env.conf", "");
    // CI disks may be nearly full: the default 50 MB limit would block publishers.
    write_file(dir_ + "/rabbitmq.conf", "disk_free_limit.absolute = 10MB\n");
}

bool RabbitMq::start_epmd() {
    epmd_ = std::make_unique<Process>(
        std::vector<std::string>{epmd_binary_, "-port", std::to_string(epmd_port_), "-address",
                                 "127.0.0.1"},
        std::map<std::string, std::string>{}, dir_ + "/epmd.log");
    const auto deadline = std::chrono::steady_clock::now() + kEpmdStartTimeout;
    while (std::chrono::steady_clock::now() < deadline) {
        if (!epmd_->running()) return false;
        if (accepts_tcp(epmd_port_)) return true;
        std::this_thread::sleep_for(kPollInterval / 2);
    }
    return false;
}

bool RabbitMq::start_node() {
    const std::map<std::string, std::string> env{
        {"HOME", dir_ + "/home"},
        {"RABBITMQ_CONF_ENV_FILE", dir_ + "/rabbitmq-env.conf"},
        {"RABBITMQ_CONFIG_FILE", dir_ + "/rabbitmq.conf"},
        {"RABBITMQ_ADVANCED_CONFIG_FILE", dir_ + "/advanced.config"},
        {"RABBITMQ_ENABLED_PLUGINS_FILE", dir_ + "/enabled_plugins"},
        {"RABBITMQ_MNESIA_BASE", dir_ + "/mnesia"},
        {"RABBITMQ_LOG_BASE", dir_ + "/log"},
        {"RABBITMQ_LOGS", "-"},  // to standard output, i.e. rabbitmq.log
        {"RABBITMQ_NODENAME", "rabbit-" + std::to_string(port_) + "@localhost"},
        {"RABBITMQ_NODE_IP_ADDRESS", "127.0.0.1"},
        {"RABBITMQ_NODE_PORT", std::to_string(port_)},
        {"RABBITMQ_DIST_PORT", std::to_string(dist_port_)},
        {"ERL_EPMD_PORT", std::to_string(epmd_port_)},
        {"ERL_CRASH_DUMP", dir_ + "/erl_crash.dump"},
        // Idle schedulers sleep instead of spinning: the node shares two cores with the
        // test and the processes under test.
        {"RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS", "+sbwt none +sbwtdcpu none +sbwtdio none"},
        // The script then execs the VM instead of running it in the background behind a
        // shell that traps signals: the child is the node itself, SIGTERM stops it cleanly,
        // SIGKILL really kills it, and the parent-death signal reaches it.
        {"RUNNING_UNDER_SYSTEMD", "true"},
    };
    node_ =
        std::make_unique<Process>(std::vector<std::string>{binary_}, env, dir_ + "/rabbitmq.log");
    const auto deadline = std::chrono::steady_clock::now() + kRabbitStartTimeout;
    while (std::chrono::steady_clock::now() < deadline) {
        if (!node_->running()) return false;
        try {
            broker_admin::amqp_ping(url());
            return true;
        } catch (const std::exception&) {
        }
        std::this_thread::sleep_for(kPollInterval * 2);
    }
    kill_process(*node_);
    throw std::runtime_error("rabbitmq-server not ready after " +
                             std::to_string(kRabbitStartTimeout.count()) + " s:\n" + log());
}

}  // namespace outboxd::test
