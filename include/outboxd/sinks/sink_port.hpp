#pragma once

// The one way a sink meets dispatch (README, "Layout"): it attaches with its profile, gets
// tasks through its Sink, answers them, heartbeats them, changes its credit window and
// detaches. The node implements it once, over every database it serves (the engine
// directory routes each task id to the database that claimed it); a sink knows nothing of
// claims, databases or the registry.
//
// Thread affinity: the node's loop thread.

#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "outboxd/sinks/sink.hpp"

namespace outboxd::sinks {

// What became of an answer from a sink.
enum class Answer {
    accepted,
    unknown_task,  // the sink holds no task of that id: nothing changed
};

class SinkPort {
public:
    virtual ~SinkPort() = default;

    // Attaches `sink` under `session_id` (unique on this node): tasks may go to it at once,
    // up to its profile's credit.
    virtual void attach(const std::string& session_id, SinkProfile profile,
                        std::shared_ptr<Sink> sink) = 0;
    // The sink's task `task_id` completed; `result_json` (checked by the sink: JSON within
    // OUTBOXD_MAX_RESULT_BYTES that jsonb can hold, "null" for none) is kept as the row's
    // result unless its namespace keeps none.
    virtual Answer complete(const std::string& session_id, const std::string& task_id,
                            std::string result_json) = 0;
    // It failed; a retry waits at least `min_delay` (an HTTP target's Retry-After), else
    // the backoff.
    virtual Answer fail(const std::string& session_id, const std::string& task_id,
                        std::string error, bool retryable,
                        std::chrono::milliseconds min_delay = {}) = 0;
    // It is alive, with optional new progress (JSON, checked by the sink). unknown_task
    // also for a cancelled task: the sink should stop it.
    virtual Answer heartbeat(const std::string& session_id, const std::string& task_id,
                             std::optional<std::string> progress_json) = 0;
    // A new credit window; tasks out above it stay out.
    virtual void set_credit(const std::string& session_id, std::int32_t credit) = 0;
    // The sink is gone: its tasks are re-armed for immediate re-claim, each consuming one
    // attempt. Nothing more goes to it.
    virtual void detach(const std::string& session_id) = 0;
};

}  // namespace outboxd::sinks
