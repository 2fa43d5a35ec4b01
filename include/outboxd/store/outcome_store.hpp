#pragma once

// The outcome writer's statement: outcomes of claimed rows, fenced by their claim. See
// OutboxSession for threads, errors and time.

#include <chrono>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "outboxd/store/outbox_row.hpp"
#include "outboxd/store/outbox_session.hpp"

namespace outboxd::store {

// A claim's durable deadline, and the heartbeat that moved it (README, "Task policy and
// heartbeats").
struct LeaseWrite {
    ClaimRef ref;
    std::chrono::milliseconds expires_in{0};   // from the database's now()
    bool beat = false;                         // a heartbeat came: record its time
    std::optional<std::string> progress_json;  // new progress (JSON text); none: keep the last
};

class OutcomeStore {
public:
    explicit OutcomeStore(OutboxSession& session) : session_(session) {}

    // Applies each outcome only if its row is still claimed under the same claim token, in
    // one statement. Returns, per input, whether it applied (false: stale, re-armed,
    // cancelled or gone). A batch naming one claim twice applies its first mention.
    std::vector<bool> record_outcomes(std::span<const Outcome> outcomes);
    // Writes each lease only while its row is still claimed under the same claim token, in
    // one statement. Returns how many applied.
    std::size_t write_leases(std::span<const LeaseWrite> leases);

private:
    OutboxSession& session_;
};

}  // namespace outboxd::store
