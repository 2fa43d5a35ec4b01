#pragma once

// Shapes one round's claims: how many rows each route may claim, under the batch size, the
// workers' free credit and each namespace's concurrency ceiling, shared fairly. Pure
// computation, apart from the fair share's memory of earlier rounds.
//
// Credit: a route may take at most its capacity, and the routes that draw on one worker's
// credit pool (a worker serving many namespaces) at most the pool's free credit together.
// Rows a namespace was dealt that its routes' pools cannot take are refunded to its fair
// share; the namespace that draws first moves on every round.
//
// Keyed backpressure: a namespace's per-node ceiling is ceil(quota × owned_shards / 1024);
// its headroom is ceiling − CLAIMED rows (never the pending backlog, so a backlog cannot
// wedge its own tenant). Fairness is per namespace, not per route, and follows weights
// (FairShare): a tenant spread over many task queues gets the same share as a tenant with
// one, and a quiet one is served in the first round it has a due row. Within a namespace the
// share goes to its routes in chunks (deal_over_routes), the first one moving on every round.

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "outboxd/dispatch/fair_share.hpp"
#include "outboxd/worker/worker_registry.hpp"

namespace outboxd::dispatch {

struct PlannedClaim {
    store::ClaimScope scope;
    std::int32_t limit = 0;
};

[[nodiscard]] std::int64_t per_node_ceiling(std::int64_t quota, std::int32_t owned_shards);

using NamespaceNumber = std::function<std::int64_t(const std::string&)>;

struct PlanInput {
    std::vector<worker::Route> routes;            // scopes with due rows and free capacity
    std::map<std::string, std::int64_t> claimed;  // durable claimed rows per namespace
    NamespaceNumber quota;                        // cluster-wide max in flight
    NamespaceNumber weight;                       // share weight (empty: 1 for all)
    std::int32_t owned_shards = 0;
    std::int32_t batch_size = 0;
};

// What moves on from round to round: which route of each namespace is offered its share
// first, and which namespace draws first on the workers' credit that namespaces share.
struct RouteRotation {
    std::map<std::string, std::size_t> next_route;  // by namespace
    std::size_t next_namespace = 0;
};

// The most rows each namespace's routes can take together: their capacities, where routes
// drawing on one worker's credit pool count the pool once.
[[nodiscard]] std::map<std::string, std::int64_t> capacity_by_namespace(
    const std::vector<worker::Route>& routes);

// Claims with limit > 0 only, in a deterministic order (namespaces, then their routes), in
// total never more than the routes' pools hold. `rotation` (kept from round to round) moves
// the route each namespace's share starts with and the namespace served first.
[[nodiscard]] std::vector<PlannedClaim> plan_claims(const PlanInput& input, FairShare& fair,
                                                    RouteRotation* rotation = nullptr);

// `share` rows over routes of `capacity`, starting at route `start` and going round: a chunk
// at a time (the even split, and at least 16 rows or the whole share), each route at most its
// capacity. Rows no route has room for are left out.
[[nodiscard]] std::vector<std::int32_t> deal_over_routes(std::int64_t share,
                                                         const std::vector<std::int32_t>& capacity,
                                                         std::size_t start);

}  // namespace outboxd::dispatch
