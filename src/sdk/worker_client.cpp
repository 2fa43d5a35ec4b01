#include "outboxd/sdk/worker_client.hpp"

#include <stdexcept>

#include "client_core.hpp"
#include "ws_url.hpp"

namespace outboxd::sdk {
namespace {

void require(bool condition, const std::string& message) {
    if (!condition) throw std::invalid_argument("worker client: " + message);
}

void validate(const WorkerOptions& options) {
    require(!options.seed_urls.empty(), "seed_urls: at least one node URL is required");
    for (const auto& url : options.seed_urls) {
        require(detail::parse_ws_url(url).has_value(),
                "seed_urls: '" + url + "' is not a ws:// or wss://host[:port]/path URL");
    }
    require(!options.worker_id.empty(), "worker_id must not be empty");
    require(!options.namespaces.empty(), "namespaces must list at least one namespace");
    for (const auto& name : options.namespaces) {
        require(!name.empty(), "namespaces must not contain an empty name");
    }
    require(!options.task_queue.empty(), "task_queue must not be empty");
    require(!options.node || !options.node->empty(), "node must not be empty when set");
    require(!options.activity_types.empty(), "activity_types must list at least one type");
    for (const auto& type : options.activity_types) {
        require(!type.empty(), "activity_types must not contain an empty name");
    }
    require(
        options.max_in_flight >= 1 && options.max_in_flight <= worker::protocol::kMaxCreditWindow,
        "max_in_flight must be between 1 and " +
            std::to_string(worker::protocol::kMaxCreditWindow));
    require(options.reconnect_min.count() >= 1, "reconnect_min must be at least 1 ms");
    require(options.reconnect_max >= options.reconnect_min,
            "reconnect_max must not be below reconnect_min");
    require(options.max_frame_bytes > 0, "max_frame_bytes must be positive");
    require(options.connect_timeout.count() > 0, "connect_timeout must be positive");
    require(options.idle_timeout.count() >= 0, "idle_timeout must not be negative");
    require(options.close_timeout.count() >= 0, "close_timeout must not be negative");
    require(options.rebalance_interval.count() >= 0, "rebalance_interval must not be negative");
}

}  // namespace

class WorkerClient::Impl {
public:
    Impl(WorkerOptions options, TaskHandler handler)
        : core_(std::make_shared<detail::ClientCore>(std::move(options), std::move(handler))) {}

    detail::ClientCore& core() { return *core_; }
    [[nodiscard]] const detail::ClientCore& core() const { return *core_; }

private:
    // Shared only so that Responders can hold a weak_ptr to it.
    std::shared_ptr<detail::ClientCore> core_;
};

WorkerClient::WorkerClient(WorkerOptions options, TaskHandler handler) {
    validate(options);
    if (!handler) throw std::invalid_argument("worker client: a task handler is required");
    impl_ = std::make_unique<Impl>(std::move(options), std::move(handler));
}

WorkerClient::~WorkerClient() { stop(std::chrono::milliseconds{0}); }

void WorkerClient::start() { impl_->core().start(); }

void WorkerClient::stop(std::chrono::milliseconds grace) { impl_->core().stop(grace); }

WorkerStats WorkerClient::stats() const { return impl_->core().stats(); }

std::vector<std::string> WorkerClient::connected_urls() const {
    return impl_->core().connected_urls();
}

}  // namespace outboxd::sdk
