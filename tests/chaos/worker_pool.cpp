#include "worker_pool.hpp"

#include <csignal>
#include <iostream>

#include "delivery_log.hpp"

namespace outboxd::chaos {

namespace {

constexpr std::size_t kLogTailBytes = 2000;

}  // namespace

WorkerPool::WorkerPool(WorkerPoolSettings settings) : settings_(std::move(settings)) {
    slots_.resize(static_cast<std::size_t>(settings_.count));
}

void WorkerPool::start_all() {
    for (std::size_t i = 0; i < slots_.size(); ++i) launch(i);
}

std::string WorkerPool::name(std::size_t i) const {
    return "worker-" + std::to_string(i + 1) + "." + std::to_string(slots_[i].generation - 1);
}

std::size_t WorkerPool::in_flight(std::size_t i) const {
    return unanswered_deliveries(slots_[i].delivery_log);
}

void WorkerPool::kill(std::size_t i) {
    auto& slot = slots_[i];
    if (!slot.process) return;
    slot.process->signal(SIGKILL);
    (void)slot.process->wait(std::chrono::seconds{10});
    slot.process.reset();
}

void WorkerPool::replace(std::size_t i) {
    kill(i);
    launch(i);
}

void WorkerPool::poll() {
    for (std::size_t i = 0; i < slots_.size(); ++i) {
        auto& slot = slots_[i];
        if (!slot.process || slot.process->running()) continue;
        ++unexpected_;
        const auto log = slot.process->log();
        std::cerr << "chaos: UNEXPECTED EXIT of " << name(i) << "; end of its log:\n"
                  << log.substr(log.size() > kLogTailBytes ? log.size() - kLogTailBytes : 0);
        slot.process.reset();
        launch(i);
    }
}

void WorkerPool::stop_all(std::chrono::milliseconds timeout) {
    for (auto& slot : slots_) {
        if (slot.process) slot.process->signal(SIGTERM);
    }
    for (std::size_t i = 0; i < slots_.size(); ++i) {
        auto& slot = slots_[i];
        if (!slot.process) continue;
        const auto code = slot.process->wait(timeout);
        if (code != 0) {
            ++unexpected_;
            std::cerr << "chaos: " << name(i) << " did not stop cleanly (code "
                      << (code ? *code : -1) << ")\n";
        }
        slot.process.reset();
    }
}

void WorkerPool::launch(std::size_t i) {
    auto& slot = slots_[i];
    const auto id = "worker-" + std::to_string(i + 1) + "." + std::to_string(slot.generation++);
    slot.delivery_log = settings_.log_dir + "/" + id + ".deliveries";
    logs_.push_back(slot.delivery_log);
    std::vector<std::string> argv{settings_.bin_dir + "/outboxd-worker",
                                  "--worker-id",
                                  id,
                                  "--activity-types",
                                  "sleep,noop",
                                  "--max-in-flight",
                                  std::to_string(settings_.max_in_flight),
                                  "--delivery-log",
                                  slot.delivery_log,
                                  "--stop-grace-ms",
                                  "2000"};
    for (const auto& url : settings_.node_urls) {
        argv.push_back("--url");
        argv.push_back(url);
    }
    slot.process =
        std::make_unique<test::Process>(std::move(argv), std::map<std::string, std::string>{},
                                        settings_.log_dir + "/" + id + ".log");
}

}  // namespace outboxd::chaos
