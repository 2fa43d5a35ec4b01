#pragma once

// A dispatcher on a real PostgreSQL with in-memory worker channels: the network is the only
// thing replaced, so dispatch behaviour is tested against the real store and lanes.

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <nlohmann/json.hpp>
#include <prometheus/registry.h>

#include "outboxd/dispatch/dispatcher.hpp"
#include "store_fixture.hpp"

namespace outboxd::test {

// Records what the dispatcher sends to one worker, as the frames the session would write.
class FakeChannel final : public worker::WorkerChannel {
public:
    explicit FakeChannel(std::size_t max_frame_bytes = 0) : max_frame_bytes_(max_frame_bytes) {}

    std::optional<std::string> send_task(const worker::Task& task) override {
        auto encoded = worker::protocol::encode_task_for(task, max_frame_bytes_);
        if (!encoded.refused.empty()) return encoded.refused;
        frames.push_back(nlohmann::json::parse(encoded.frame));
        return std::nullopt;
    }
    void close(std::string_view reason) override { closed_reason = std::string{reason}; }

    // Task frames received so far, in order.
    [[nodiscard]] std::vector<nlohmann::json> tasks() const {
        std::vector<nlohmann::json> out;
        for (const auto& f : frames) {
            if (f["type"] == "task") out.push_back(f);
        }
        return out;
    }

    std::vector<nlohmann::json> frames;
    std::optional<std::string> closed_reason;

private:
    std::size_t max_frame_bytes_;
};

inline dispatch::DispatchSettings fast_settings() {
    dispatch::DispatchSettings s;
    s.poll_interval = std::chrono::milliseconds{20};
    s.batch_size = 16;
    s.max_attempts = 3;
    s.backoff = {std::chrono::milliseconds{1000}, 2.0, std::chrono::milliseconds{60000}};
    s.task_timeout = std::chrono::milliseconds{30000};
    s.maintenance.reconcile_interval = std::chrono::milliseconds{100};
    return s;
}

class DispatchHarness {
public:
    explicit DispatchHarness(dispatch::DispatchSettings settings = fast_settings())
        : claims_({.name = "claims"}, db.url()),
          claims_apart_({.name = "claims_apart"}, db.url()),
          outcomes_({.name = "outcomes"}, db.url()),
          maintenance_({.name = "maintenance"}, db.url()),
          api_({.name = "api"}, db.url()),
          namespaces(ioc.get_executor(), api_, 10000, std::chrono::milliseconds{50}),
          dispatcher(ioc.get_executor(), {claims_, claims_apart_, outcomes_, maintenance_},
                     registry, namespaces, metrics, settings, [this] { return owner; }) {
        db.lease(owner.incarnation);
        // A node claims nothing before it knows the namespaces' settings: here they are
        // known to be the defaults (tests set their own, or start the cache).
        namespaces.set(std::string{store::kDefaultRoute}, 10000, {});
    }

    ~DispatchHarness() {
        dispatcher.stop();
        namespaces.stop();
    }

    // Connects a worker; returns its channel. Default: namespace/queue "default", types charge.
    std::shared_ptr<FakeChannel> connect(const std::string& session_id) {
        return connect(session_id, default_hello());
    }
    std::shared_ptr<FakeChannel> connect(const std::string& session_id,
                                         worker::protocol::Hello hello) {
        auto channel = std::make_shared<FakeChannel>(hello.max_frame_bytes);
        registry.add(session_id, std::move(hello), channel);
        dispatcher.worker_joined();
        return channel;
    }

    // What the insert trigger's wake does for rows staged into `queue` (namespace, queue).
    void wake(const std::string& ns = "default", const std::string& queue = "default") {
        dispatcher.woken({{ns, queue}}, false);
    }

    static worker::protocol::Hello default_hello() { return default_hello(16); }
    static worker::protocol::Hello default_hello(std::int32_t credit) {
        worker::protocol::Hello hello;
        hello.worker_id = "w";
        hello.activity_types = {"charge"};
        hello.max_in_flight = credit;
        return hello;
    }

    worker::WorkerEntry& entry(const std::string& session_id) { return *registry.find(session_id); }

    // Answers `task` (a task frame) as the worker of `session_id` would; true when the
    // dispatcher accepted the answer, false when it refused it (unknown_task).
    bool complete(const std::string& session_id, const nlohmann::json& task) {
        return dispatcher.on_complete(session_id, task["task_id"].get<std::string>()) ==
               dispatch::Answer::accepted;
    }
    bool fail(const std::string& session_id, const nlohmann::json& task, bool retryable = true,
              std::string error = "boom") {
        return dispatcher.on_fail(session_id, task["task_id"].get<std::string>(), std::move(error),
                                  retryable) == dispatch::Answer::accepted;
    }

    // Runs the loop until `done()` or `timeout`; returns whether `done()` held.
    bool run_until(const std::function<bool()>& done,
                   std::chrono::milliseconds timeout = std::chrono::seconds{10}) {
        const auto deadline = std::chrono::steady_clock::now() + timeout;
        while (!done()) {
            if (std::chrono::steady_clock::now() > deadline) return false;
            ioc.restart();
            ioc.run_for(std::chrono::milliseconds{5});
        }
        return true;
    }
    void run_for(std::chrono::milliseconds duration) {
        run_until([] { return false; }, duration);
    }

    store::Status status_of(const std::string& key) {
        const auto row = store.find(key);
        if (!row) throw std::runtime_error("no row " + key);
        return row->status;
    }
    // Waits for the row to reach `status` (outcome writes are asynchronous).
    bool await_status(const std::string& key, store::Status status,
                      std::chrono::milliseconds timeout = std::chrono::seconds{10}) {
        return run_until([&] { return status_of(key) == status; }, timeout);
    }

    TestDatabase db;
    test::TestStore store{db.url()};
    store::Owner owner{"node-a/boot-1", store::ShardRanges::all()};
    prometheus::Registry prometheus_registry;
    metrics::NodeMetrics metrics{prometheus_registry};
    boost::asio::io_context ioc{1};

    // The lane of claim rounds (a test may hold it up to keep a round in flight).
    dispatch::DbLane& claims_lane() { return claims_; }

private:
    dispatch::DbLane claims_;
    dispatch::DbLane claims_apart_;
    dispatch::DbLane outcomes_;
    dispatch::DbLane maintenance_;
    dispatch::DbLane api_;

public:
    worker::WorkerRegistry registry;
    dispatch::NamespaceCache namespaces;
    dispatch::Dispatcher dispatcher;
};

}  // namespace outboxd::test
