#include "broker_process.hpp"

#include <chrono>
#include <filesystem>
#include <stdexcept>
#include <thread>
#include <utility>

#include <spdlog/spdlog.h>

#include "outboxd/broker_admin/broker_admin.hpp"
#include "outboxd/broker_admin/broker_servers.hpp"

namespace outboxd::bench {
namespace {

using namespace std::chrono_literals;

constexpr auto kNatsStartTimeout = 20s;
// A first start initialises mnesia: 5–10 s on two loaded cores.
constexpr auto kRabbitStartTimeout = 60s;
constexpr auto kEpmdStartTimeout = 10s;
constexpr auto kPollInterval = 100ms;
// A port found free may be taken before the broker binds it: try again on others.
constexpr int kStartAttempts = 3;
// What the brokers stored is scratch: no need to wait for a clean shutdown.
constexpr std::chrono::milliseconds kStopGrace{3000};

ChildSpec spec_of(const broker_admin::ServerCommand& command, std::string log_path) {
    ChildSpec spec;
    spec.argv = command.argv;
    spec.env.assign(command.env.begin(), command.env.end());
    spec.log_path = std::move(log_path);
    return spec;
}

// Polls `ready` until it holds (true) or `process` exits (false); throws with the log's tail
// when neither happens within `timeout`.
template <typename Ready>
bool await_ready(ChildProcess& process, Ready ready, std::chrono::seconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
        if (!process.alive()) return false;
        if (ready()) return true;
        std::this_thread::sleep_for(kPollInterval);
    }
    throw std::runtime_error{process.name() + " not ready after " +
                             std::to_string(timeout.count()) + " s:\n" + process.log_tail(20)};
}

template <typename Call>
bool succeeds(Call call) {
    try {
        call();
        return true;
    } catch (const std::exception&) {
        return false;
    }
}

}  // namespace

// ---- NatsProcess ----

NatsProcess::NatsProcess(std::string dir) : dir_(std::move(dir)) {
    std::filesystem::create_directories(dir_);
    for (int attempt = 1; !start(); ++attempt) {
        if (attempt == kStartAttempts) {
            throw std::runtime_error{"nats-server did not start:\n" + server_->log_tail(20)};
        }
    }
}

NatsProcess::~NatsProcess() {
    if (server_) server_->stop(kStopGrace);
}

bool NatsProcess::start() {
    const auto ports = broker_admin::free_ports(2);
    url_ = broker_admin::nats_url(ports[0]);
    server_ = std::make_unique<ChildProcess>(spec_of(
        broker_admin::nats_server_command(dir_, ports[0], ports[1]), dir_ + "/nats-server.log"));
    // JetStream is up before the server takes clients.
    return await_ready(
        *server_, [this] { return succeeds([this] { broker_admin::nats_ping(url_); }); },
        kNatsStartTimeout);
}

// ---- RabbitMqProcess ----

RabbitMqProcess::RabbitMqProcess(std::string dir) : dir_(std::move(dir)) {
    std::filesystem::create_directories(dir_);
    for (int attempt = 1;; ++attempt) {
        try {
            if (start()) return;
        } catch (...) {
            stop();
            throw;
        }
        const auto log = (node_ ? node_->log_tail(20) : std::string{}) +
                         (epmd_ ? epmd_->log_tail(5) : std::string{});
        stop();
        if (attempt == kStartAttempts) {
            throw std::runtime_error{"rabbitmq-server did not start:\n" + log};
        }
    }
}

RabbitMqProcess::~RabbitMqProcess() { stop(); }

bool RabbitMqProcess::start() {
    const auto ports = broker_admin::free_ports(3);
    epmd_port_ = ports[2];
    url_ = broker_admin::rabbitmq_url(ports[0]);
    epmd_ = std::make_unique<ChildProcess>(
        spec_of(broker_admin::epmd_command(epmd_port_), dir_ + "/epmd.log"));
    if (!await_ready(
            *epmd_, [this] { return broker_admin::accepts_tcp(epmd_port_); }, kEpmdStartTimeout)) {
        return false;
    }
    node_ = std::make_unique<ChildProcess>(
        spec_of(broker_admin::rabbitmq_command(dir_, ports[0], ports[1], epmd_port_),
                dir_ + "/rabbitmq.log"));
    spdlog::info("rabbitmq-server starting at {} (about 8 s)", url_);
    return await_ready(
        *node_, [this] { return succeeds([this] { broker_admin::amqp_ping(url_); }); },
        kRabbitStartTimeout);
}

void RabbitMqProcess::stop() {
    if (node_) node_->stop(kStopGrace);
    node_.reset();
    if (epmd_) epmd_->stop(kStopGrace);
    epmd_.reset();
    // A node whose epmd was gone starts one of its own, a daemon no parent-death signal
    // reaches: ask it to exit.
    if (epmd_port_ != 0 && broker_admin::accepts_tcp(epmd_port_)) {
        ChildProcess kill{spec_of(broker_admin::epmd_kill_command(epmd_port_), dir_ + "/epmd.log")};
        const auto deadline = std::chrono::steady_clock::now() + kStopGrace;
        while (kill.alive() && std::chrono::steady_clock::now() < deadline) {
            std::this_thread::sleep_for(kPollInterval);
        }
    }
}

}  // namespace outboxd::bench
