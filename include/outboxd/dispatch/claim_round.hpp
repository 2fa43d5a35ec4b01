#pragma once

// One sweep's claims, run on a database lane: read the durable claimed count of every
// namespace with a route (one grouped query), plan the claims under quotas and fairness,
// then claim route by route (one statement each).

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "outboxd/dispatch/claim_planner.hpp"
#include "outboxd/store/outbox_store.hpp"

namespace outboxd::dispatch {

struct ClaimRoundResult {
    std::vector<store::OutboxRow> rows;
    // Some route got every row it asked for: more are probably waiting.
    bool saturated = false;
};

ClaimRoundResult claim_round(store::OutboxStore& store, const store::Owner& owner,
                             const std::vector<worker::Route>& routes,
                             const std::function<std::int64_t(const std::string&)>& quota,
                             std::int32_t batch_size, std::size_t rotation);

}  // namespace outboxd::dispatch
