#pragma once

// The outcome writer's statement: outcomes of claimed rows, fenced by their claim. See
// OutboxSession for threads, errors and time.

#include <span>
#include <vector>

#include "outboxd/store/outbox_row.hpp"
#include "outboxd/store/outbox_session.hpp"

namespace outboxd::store {

class OutcomeStore {
public:
    explicit OutcomeStore(OutboxSession& session) : session_(session) {}

    // Applies each outcome only if its row is still claimed under the same claim token, in
    // one statement. Returns, per input, whether it applied (false: stale, re-armed,
    // cancelled or gone). A batch naming one claim twice applies its first mention.
    std::vector<bool> record_outcomes(std::span<const Outcome> outcomes);

private:
    OutboxSession& session_;
};

}  // namespace outboxd::store
