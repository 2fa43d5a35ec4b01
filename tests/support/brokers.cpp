#include "brokers.hpp"

#include <csignal>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

#include <nlohmann/json.hpp>

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

std::string read_file(const std::string& path) {
    std::ifstream in{path};
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
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

NatsServer::NatsServer(std::string dir, NatsAuth auth, NatsTls tls)
    : dir_(std::move(dir)), auth_(std::move(auth)), tls_(std::move(tls)) {
    if (!auth_.token.empty() && !auth_.user.empty()) {
        throw std::runtime_error("NatsServer: a token or a user, not both");
    }
    for (int attempt = 1;; ++attempt) {
        const auto ports = broker_admin::free_ports(2);
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

std::string NatsServer::url() const {
    const auto plain = broker_admin::nats_url(port_);
    return tls_.cert_file.empty() ? plain : "tls" + plain.substr(plain.find("://"));
}

std::string NatsServer::client_url() const { return broker_admin::nats_url(port_, auth_); }

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
    auto command = broker_admin::nats_server_command(dir_, port_, monitor_port_, auth_, tls_);
    process_ =
        std::make_unique<Process>(std::move(command.argv), command.env, dir_ + "/nats-server.log");
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
        // Over TLS, or with a configuration that grants the helpers no login (an operator's
        // accounts): the port accepting connections is all a helper can see.
        if (!tls_.cert_file.empty() ||
            (!auth_.config.empty() && auth_.user.empty() && auth_.token.empty())) {
            return broker_admin::accepts_tcp(port_);
        }
        // The client port too, with the configured credentials.
        broker_admin::nats_ping(client_url());
        return true;
    } catch (const std::exception&) {
        return false;
    }
}

// ---- RabbitMq ----

RabbitMq::RabbitMq(std::string dir, broker_admin::RabbitTls tls)
    : dir_(std::move(dir)), tls_(std::move(tls)) {
    fs::create_directories(dir_);
    const bool with_tls = !tls_.cert_file.empty();
    for (int attempt = 1;; ++attempt) {
        const auto ports = broker_admin::free_ports(with_tls ? 4 : 3);
        port_ = ports[0];
        dist_port_ = ports[1];
        epmd_port_ = ports[2];
        if (with_tls) tls_.port = ports[3];
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
    if (epmd_port_ != 0 && broker_admin::accepts_tcp(epmd_port_)) {
        auto command = broker_admin::epmd_kill_command(epmd_port_);
        Process kill_epmd{std::move(command.argv), command.env, dir_ + "/epmd.log"};
        kill_epmd.wait(kStopTimeout);
    }
}

std::string RabbitMq::url() const { return broker_admin::rabbitmq_url(port_); }

std::string RabbitMq::tls_url() const {
    if (tls_.port == 0) throw std::logic_error("RabbitMq: started without TLS");
    const auto plain = broker_admin::rabbitmq_url(tls_.port);
    return "amqps" + plain.substr(plain.find("://"));
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

bool RabbitMq::start_epmd() {
    auto command = broker_admin::epmd_command(epmd_port_);
    epmd_ = std::make_unique<Process>(std::move(command.argv), command.env, dir_ + "/epmd.log");
    const auto deadline = std::chrono::steady_clock::now() + kEpmdStartTimeout;
    while (std::chrono::steady_clock::now() < deadline) {
        if (!epmd_->running()) return false;
        if (broker_admin::accepts_tcp(epmd_port_)) return true;
        std::this_thread::sleep_for(kPollInterval / 2);
    }
    return false;
}

bool RabbitMq::start_node() {
    auto command = broker_admin::rabbitmq_command(dir_, port_, dist_port_, epmd_port_, tls_);
    node_ = std::make_unique<Process>(std::move(command.argv), command.env, dir_ + "/rabbitmq.log");
    const auto deadline = std::chrono::steady_clock::now() + kRabbitStartTimeout;
    while (std::chrono::steady_clock::now() < deadline) {
        if (!node_->running()) return false;
        try {
            broker_admin::amqp_ping(url());
            if (tls_.port == 0 || broker_admin::accepts_tcp(tls_.port)) return true;
        } catch (const std::exception&) {
        }
        std::this_thread::sleep_for(kPollInterval * 2);
    }
    kill_process(*node_);
    throw std::runtime_error("rabbitmq-server not ready after " +
                             std::to_string(kRabbitStartTimeout.count()) + " s:\n" + log());
}

}  // namespace outboxd::test
