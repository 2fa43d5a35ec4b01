#pragma once

// A node's engines, one per outbox database it serves (one today), and the one SinkPort of
// the node: a sink attaches once and may take tasks of every database; each answer goes to
// the database that claimed its task, told by the task id. The first database's task ids
// are "<row id>.<claim token>" (the wire contract); another database's carry "@<index>"
// after them.
//
// Thread affinity: the loop thread.

#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "outboxd/engine/outbox_engine.hpp"
#include "outboxd/sinks/sink_port.hpp"
#include "outboxd/store/shard_ranges.hpp"
#include "outboxd/worker/worker_registry.hpp"

namespace outboxd::engine {

// One node of the fleet, as the databases of this node see it: the databases it serves
// (of those this node serves, in this node's order) and its shards in each.
struct FleetNode {
    std::string node_id;
    std::string url;
    bool draining = false;
    std::vector<std::pair<std::string, store::ShardRanges>> databases;
};

class EngineDirectory final : public sinks::SinkPort {
public:
    explicit EngineDirectory(worker::WorkerRegistry& registry) : registry_(registry) {}

    // The task id suffix of the engine to be added next: set it in its settings.
    [[nodiscard]] std::string next_task_id_suffix() const;
    // Adds an engine (before start()); returns it.
    OutboxEngine& add(std::unique_ptr<OutboxEngine> engine);

    void start();
    // Drains every engine; `done` once all of them have.
    void drain(std::function<void()> done);
    void abandon_outstanding(const std::string& reason);
    void stop();

    [[nodiscard]] bool empty() const { return engines_.empty(); }
    // The first database's engine (the node's cluster view, the API's database).
    [[nodiscard]] OutboxEngine& primary() { return *engines_.front(); }
    [[nodiscard]] const OutboxEngine& primary() const { return *engines_.front(); }
    [[nodiscard]] const std::vector<std::unique_ptr<OutboxEngine>>& engines() const {
        return engines_;
    }
    // Some engine ready (the node serves something).
    [[nodiscard]] bool ready() const;
    // The live nodes of every database's cluster, merged by node id, in node id order.
    [[nodiscard]] std::vector<FleetNode> fleet() const;
    // Tasks out over every engine.
    [[nodiscard]] std::size_t outstanding() const;
    // The engine of database `name`, if this node serves it.
    [[nodiscard]] OutboxEngine* find(std::string_view name) const;
    // The engine whose task `task_id` is, if any.
    [[nodiscard]] OutboxEngine* engine_of(const std::string& task_id) const;

    // sinks::SinkPort
    void attach(const std::string& session_id, sinks::SinkProfile profile,
                std::shared_ptr<sinks::Sink> sink) override;
    sinks::Answer complete(const std::string& session_id, const std::string& task_id,
                           std::string result_json) override;
    sinks::Answer fail(const std::string& session_id, const std::string& task_id, std::string error,
                       bool retryable, std::chrono::milliseconds min_delay) override;
    sinks::Answer heartbeat(const std::string& session_id, const std::string& task_id,
                            std::optional<std::string> progress_json) override;
    void set_credit(const std::string& session_id, std::int32_t credit) override;
    void detach(const std::string& session_id) override;

private:
    worker::WorkerRegistry& registry_;
    std::vector<std::unique_ptr<OutboxEngine>> engines_;
};

}  // namespace outboxd::engine
