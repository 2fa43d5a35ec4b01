#include "outboxd/dispatch/claim_planner.hpp"

#include <algorithm>

#include "outboxd/store/shard_ranges.hpp"

namespace outboxd::dispatch {

std::int64_t per_node_ceiling(std::int64_t quota, std::int32_t owned_shards) {
    if (quota <= 0 || owned_shards <= 0) return 0;
    return (quota * owned_shards + store::kShardCount - 1) / store::kShardCount;
}

std::vector<PlannedClaim> plan_claims(const PlanInput& input, FairShare& fair) {
    // Group routes by namespace; each namespace's room is its capacity under headroom.
    std::map<std::string, std::vector<std::size_t>> by_namespace;
    for (std::size_t i = 0; i < input.routes.size(); ++i) {
        by_namespace[input.routes[i].scope.namespace_name].push_back(i);
    }
    std::vector<FairShare::Demand> demands;
    std::vector<const std::vector<std::size_t>*> routes_of;
    for (auto& [ns, routes] : by_namespace) {
        std::int64_t capacity = 0;
        for (const auto i : routes) capacity += input.routes[i].capacity;
        const auto claimed_it = input.claimed.find(ns);
        const std::int64_t claimed = claimed_it == input.claimed.end() ? 0 : claimed_it->second;
        const std::int64_t headroom = std::max<std::int64_t>(
            0, per_node_ceiling(input.quota(ns), input.owned_shards) - claimed);
        demands.push_back({ns, input.weight ? input.weight(ns) : 1, std::min(capacity, headroom)});
        routes_of.push_back(&routes);
    }
    const auto shares = fair.deal(demands, input.batch_size);

    // Within a namespace, deal its share over its routes one row at a time, bounded by
    // each route's capacity.
    std::vector<PlannedClaim> plan;
    for (std::size_t t = 0; t < demands.size(); ++t) {
        const auto& routes = *routes_of[t];
        std::vector<std::int32_t> limits(routes.size(), 0);
        std::int64_t left = shares[t];
        bool progress = true;
        while (left > 0 && progress) {
            progress = false;
            for (std::size_t r = 0; r < routes.size() && left > 0; ++r) {
                if (limits[r] < input.routes[routes[r]].capacity) {
                    ++limits[r];
                    --left;
                    progress = true;
                }
            }
        }
        for (std::size_t r = 0; r < routes.size(); ++r) {
            if (limits[r] > 0) plan.push_back({input.routes[routes[r]].scope, limits[r]});
        }
    }
    return plan;
}

}  // namespace outboxd::dispatch
