#include "receiver.hpp"

#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <signal.h>

#include "net_client.hpp"

namespace outboxd::test {

Receiver::Receiver(const std::string& dir, const std::string& name, std::vector<std::string> flags,
                   std::uint16_t port)
    : dir_(dir), name_(name), flags_(std::move(flags)), port_(port) {
    start();
}

void Receiver::start() {
    std::vector<std::string> argv{bin_dir() + "/outboxd-receiver", "--listen",
                                  "127.0.0.1:" + std::to_string(port_), "--log",
                                  dir_ + "/" + name_ + ".requests"};
    argv.insert(argv.end(), flags_.begin(), flags_.end());
    const auto log = dir_ + "/" + name_ + "." + std::to_string(++starts_) + ".log";
    process_ = std::make_unique<Process>(argv, std::map<std::string, std::string>{}, log);
    if (!process_->await_log("listening ", std::chrono::seconds{20})) {
        throw std::runtime_error("outboxd-receiver did not start:\n" + process_->log());
    }
    const auto text = process_->log();
    const auto at = text.find("listening ");
    const auto colon = text.find(':', at);
    port_ = static_cast<std::uint16_t>(std::stoi(text.substr(colon + 1)));
}

std::string Receiver::url(const std::string& path) const {
    return "http://127.0.0.1:" + std::to_string(port_) + path;
}

nlohmann::json Receiver::stats() const {
    return nlohmann::json::parse(http_call(port_, "GET", "/stats").body);
}

std::vector<ReceivedRequest> Receiver::requests() const {
    std::ifstream in{dir_ + "/" + name_ + ".requests"};
    std::vector<ReceivedRequest> out;
    for (std::string line; std::getline(in, line);) {
        std::istringstream fields{line};
        ReceivedRequest r;
        if (fields >> r.epoch_ms >> r.dispatch_key >> r.attempt >> r.status >> r.concurrent) {
            fields >> r.delivery;
            out.push_back(r);
        }
    }
    return out;
}

void Receiver::kill() {
    process_->signal(SIGKILL);
    (void)process_->wait(std::chrono::seconds{10});
}

void Receiver::restart() {
    // The port may linger a moment after the kill.
    for (int i = 0; i < 50; ++i) {
        try {
            start();
            return;
        } catch (const std::exception&) {
            std::this_thread::sleep_for(std::chrono::milliseconds{100});
        }
    }
    start();
}

}  // namespace outboxd::test
