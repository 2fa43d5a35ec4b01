#pragma once

// A sink: anything dispatch hands tasks to (a WebSocket worker, an HTTP push target, a test
// double). It attaches through the SinkPort (sink_port.hpp) with a SinkProfile, and dispatch
// speaks to it through this interface, in domain terms: the wire format is the sink's own.

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "outboxd/sinks/task.hpp"

namespace outboxd::sinks {

// What a sink takes, said once when it attaches (a worker's hello, an HTTP target's
// settings) and never changed after; its credit window changes through the port.
struct SinkProfile {
    std::string name;  // for logs: a worker's worker_id, "http-target:<name>"
    std::vector<std::string> namespaces{"default"};
    std::string task_queue = "default";
    std::optional<std::string> node;  // its node label: placement, pinned rows
    std::vector<std::string> activity_types;
    std::int32_t credit = 1;  // the first credit window
    // The attempt's timeout of this sink's tasks when not the task policy's (an HTTP
    // target's request timeout; such a sink sends no heartbeats), and how much longer the
    // node waits for the answer (the sink times its attempts out itself, with a clearer
    // error).
    std::optional<std::chrono::milliseconds> task_timeout;
    std::chrono::milliseconds deadline_grace{0};
    // Only this database's tasks (an HTTP target is kept in one); none: every database's.
    std::optional<std::string> database;
};

// Dispatch's handle on one attached sink. Called on the loop thread only.
class Sink {
public:
    virtual ~Sink() = default;
    // Queues one task. Returns why this sink can never take it (e.g. it is larger than the
    // frames the worker reads), or nothing when it is on its way.
    [[nodiscard]] virtual std::optional<std::string> send_task(const Task& task) = 0;
    // Tells the sink to stop task `task_id`: it was settled without it. A sink that cannot
    // tell (an HTTP target) does nothing; the late answer is fenced all the same.
    virtual void send_cancel(const std::string& task_id, std::string_view reason) {
        (void)task_id;
        (void)reason;
    }
    // Closes it; the sink detaches itself through the port.
    virtual void close(std::string_view reason) = 0;
};

}  // namespace outboxd::sinks
