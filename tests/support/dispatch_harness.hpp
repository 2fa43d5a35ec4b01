#pragma once

// A dispatcher on a real PostgreSQL, wired as an engine wires it (its lanes, ports,
// namespace cache and maintenance) but with a fixed owner and sinks of the tests' own
// (MemorySink): the network is the only thing replaced, so dispatch behaviour is tested
// against the real store and lanes.

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <nlohmann/json.hpp>
#include <prometheus/registry.h>

#include "loop_wait.hpp"
#include "memory_sink.hpp"
#include "outboxd/dispatch/dispatcher.hpp"
#include "outboxd/dispatch/lane_ports.hpp"
#include "outboxd/maintenance/maintenance.hpp"
#include "outboxd/maintenance/upkeep.hpp"
#include "store_fixture.hpp"

namespace outboxd::test {

// The harness's historical name for its sink.
using FakeChannel = MemorySink;

inline dispatch::DispatchSettings fast_settings() {
    dispatch::DispatchSettings s;
    s.poll_interval = std::chrono::milliseconds{20};
    s.batch_size = 16;
    s.max_attempts = 3;
    s.backoff = {std::chrono::milliseconds{1000}, 2.0, std::chrono::milliseconds{60000}};
    s.task_timeout = std::chrono::milliseconds{30000};
    return s;
}

inline maintenance::UpkeepSettings fast_maintenance(const dispatch::DispatchSettings& d) {
    maintenance::UpkeepSettings s;
    s.reconcile_interval = std::chrono::milliseconds{100};
    s.stale = d.task_timeout + d.stale_grace;
    s.stale_grace = d.stale_grace;
    return s;
}

class DispatchHarness {
public:
    explicit DispatchHarness(const dispatch::DispatchSettings& settings = fast_settings())
        : claims_({.name = "claims"}, db.url()),
          claims_apart_({.name = "claims_apart"}, db.url()),
          outcomes_({.name = "outcomes"}, db.url()),
          maintenance_({.name = "maintenance"}, db.url()),
          api_({.name = "api"}, db.url()),
          rounds_(ioc.get_executor(), claims_, claims_apart_, "default"),
          writes_(ioc.get_executor(), outcomes_, metrics, 2000),
          namespaces(ioc.get_executor(), api_, 10000, std::chrono::milliseconds{50}),
          dispatcher(ioc.get_executor(), {rounds_, writes_}, registry, namespaces, metrics,
                     settings, [this] { return owner; }),
          maintenance(
              ioc.get_executor(), maintenance_, metrics,
              maintenance::upkeep_jobs(
                  fast_maintenance(settings),
                  {[this] { return owner; },
                   [this]() -> std::optional<maintenance::OrderedNamespaces> {
                       if (!namespaces.loaded()) return std::nullopt;
                       auto [skip, block] = namespaces.ordered();
                       return maintenance::OrderedNamespaces{std::move(skip), std::move(block)};
                   },
                   [this](std::size_t) { dispatcher.claim_from_front(); }, metrics})) {
        db.lease(owner.incarnation);
        // A node claims nothing before it knows the namespaces' settings: here they are
        // known to be the defaults (tests set their own, or start the cache).
        namespaces.set(std::string{store::kDefaultRoute}, 10000, {});
    }

    ~DispatchHarness() {
        dispatcher.stop();
        maintenance.stop();
        namespaces.stop();
    }

    // Starts the dispatcher and maintenance, as an engine does.
    void start() {
        dispatcher.start();
        maintenance.start();
    }

    // Attaches a sink; returns it. Default: namespace/queue "default", types charge.
    // `max_frame_bytes`: the largest frame it reads (0: not stated).
    std::shared_ptr<MemorySink> connect(const std::string& session_id) {
        return connect(session_id, default_hello());
    }
    std::shared_ptr<MemorySink> connect(const std::string& session_id, sinks::SinkProfile hello,
                                        std::size_t max_frame_bytes = 0) {
        auto sink = std::make_shared<MemorySink>(max_frame_bytes);
        registry.add(session_id, std::move(hello), sink);
        dispatcher.sink_attached();
        return sink;
    }
    // The sink is gone (as the node's SinkPort detaches one).
    void lose(const std::string& session_id) {
        dispatcher.on_sink_lost(session_id);
        registry.remove(session_id);
    }
    [[nodiscard]] const dispatch::OutcomeWriter& outcomes() const { return writes_.outcomes(); }

    // What the insert trigger's wake does for rows staged into `queue` (namespace, queue).
    void wake(const std::string& ns = "default", const std::string& queue = "default") {
        dispatcher.woken({{ns, queue}}, false);
    }

    static sinks::SinkProfile default_hello() { return default_hello(16); }
    static sinks::SinkProfile default_hello(std::int32_t credit) {
        sinks::SinkProfile hello;
        hello.name = "w";
        hello.activity_types = {"charge"};
        hello.credit = credit;
        return hello;
    }

    worker::WorkerEntry& entry(const std::string& session_id) { return *registry.find(session_id); }

    // Answers `task` (a task frame) as the worker of `session_id` would; true when the
    // dispatcher accepted the answer, false when it refused it (unknown_task).
    bool complete(const std::string& session_id, const nlohmann::json& task) {
        return dispatcher.on_complete(session_id, task["task_id"].get<std::string>()) ==
               sinks::Answer::accepted;
    }
    bool fail(const std::string& session_id, const nlohmann::json& task, bool retryable = true,
              std::string error = "boom") {
        return dispatcher.on_fail(session_id, task["task_id"].get<std::string>(), std::move(error),
                                  retryable) == sinks::Answer::accepted;
    }

    // Runs the loop until `done()` or `timeout`; returns whether `done()` held.
    bool run_until(const std::function<bool()>& done,
                   std::chrono::milliseconds timeout = std::chrono::seconds{10}) {
        return test::run_until(ioc, done, timeout);
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
    metrics::NodeMetrics node_metrics{prometheus_registry};
    metrics::DatabaseMetrics metrics{node_metrics, "default"};
    boost::asio::io_context ioc{1};

    // The lane of claim rounds (a test may hold it up to keep a round in flight).
    store::ClaimLane& claims_lane() { return claims_; }

private:
    store::ClaimLane claims_;
    store::ClaimLane claims_apart_;
    store::OutcomeLane outcomes_;
    store::MaintenanceLane maintenance_;
    store::AdminLane api_;
    dispatch::LaneRounds rounds_;
    dispatch::LaneTaskWrites writes_;

public:
    worker::WorkerRegistry registry;
    dispatch::NamespaceCache namespaces;
    dispatch::Dispatcher dispatcher;
    maintenance::Maintenance maintenance;
};

}  // namespace outboxd::test
