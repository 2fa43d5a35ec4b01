#pragma once

// One claimed row, as a destination is to run it: what dispatch hands a sink. The worker
// protocol's task frame carries exactly these fields (README, "Worker protocol"), an HTTP
// push request its JSON (README, "HTTP push").

#include <cstdint>
#include <optional>
#include <string>

namespace outboxd::sinks {

struct Task {
    std::string task_id;  // "<row id>.<claim token>": names one claim of one row
    std::string database =
        "default";  // the outbox database of the row (README, "Several databases")
    std::string dispatch_key;
    std::string workflow_id;
    std::int64_t ordinal = 0;
    std::optional<std::string> run_id;
    std::string namespace_name;
    std::string task_queue;
    std::optional<std::string> node;
    std::string activity_type;
    std::string input_json = "null";  // valid JSON, spliced verbatim into the frame
    std::int64_t attempt = 1;         // one-based (a stored attempt + 1)
    // One-based count of this row's deliveries, this one included: it grows on every delivery
    // whatever its cause (a retry, a re-arm after a lost node or worker), where `attempt` grows
    // only on failures. 0 from a node that does not send it.
    std::int64_t delivery = 1;
    // The attempt's limit; 0: none (a heartbeating task without a total limit).
    std::int64_t timeout_ms = 0;
    // The longest silence between heartbeats before the task times out; the frame leaves
    // it out when none applies.
    std::optional<std::int64_t> heartbeat_timeout_ms;
    std::int64_t priority = 0;  // the row's, 0..100 (higher first)
    // W3C trace context of the request that staged the row; the frame leaves it out when
    // the row has none.
    std::optional<std::string> traceparent;
};

}  // namespace outboxd::sinks
