#pragma once

// Shapes one sweep's claims: how many rows each route may claim, under the batch size,
// the workers' free credit and each namespace's concurrency ceiling. Pure computation.
//
// Keyed backpressure: a namespace's per-node ceiling is ceil(quota × owned_shards / 1024);
// its headroom is ceiling − CLAIMED rows (never the pending backlog, so a backlog cannot
// wedge its own tenant). Fairness is per namespace, not per route: the batch is dealt out
// one row at a time round-robin over namespaces, so a tenant spread over many task queues
// gets the same share as a tenant with one.

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "outboxd/worker/worker_registry.hpp"

namespace outboxd::dispatch {

struct PlannedClaim {
    store::ClaimScope scope;
    std::int32_t limit = 0;
};

[[nodiscard]] std::int64_t per_node_ceiling(std::int64_t quota, std::int32_t owned_shards);

struct PlanInput {
    std::vector<worker::Route> routes;             // scopes with free worker capacity
    std::map<std::string, std::int64_t> claimed;   // durable claimed rows per namespace
    std::function<std::int64_t(const std::string&)> quota;  // cluster-wide max in flight
    std::int32_t owned_shards = 0;
    std::int32_t batch_size = 0;
    std::size_t rotation = 0;  // which namespace is dealt first; advance every sweep
};

// Claims with limit > 0 only, in a deterministic order.
[[nodiscard]] std::vector<PlannedClaim> plan_claims(const PlanInput& input);

}  // namespace outboxd::dispatch
