#include "outboxd/dispatch/claim_planner.hpp"

#include <algorithm>

#include "outboxd/store/shard_ranges.hpp"

namespace outboxd::dispatch {

std::int64_t per_node_ceiling(std::int64_t quota, std::int32_t owned_shards) {
    if (quota <= 0 || owned_shards <= 0) return 0;
    return (quota * owned_shards + store::kShardCount - 1) / store::kShardCount;
}

std::vector<PlannedClaim> plan_claims(const PlanInput& input) {
    // Group routes by namespace; each namespace's demand is its capacity under headroom.
    std::map<std::string, std::vector<std::size_t>> by_namespace;
    for (std::size_t i = 0; i < input.routes.size(); ++i) {
        by_namespace[input.routes[i].scope.namespace_name].push_back(i);
    }
    struct Tenant {
        std::string name;
        std::vector<std::size_t> routes;
        std::int64_t room = 0;  // rows it may still take this sweep
        std::int64_t share = 0;
    };
    std::vector<Tenant> tenants;
    for (auto& [ns, routes] : by_namespace) {
        std::int64_t capacity = 0;
        for (const auto i : routes) capacity += input.routes[i].capacity;
        const auto claimed_it = input.claimed.find(ns);
        const std::int64_t claimed = claimed_it == input.claimed.end() ? 0 : claimed_it->second;
        const std::int64_t headroom =
            std::max<std::int64_t>(0, per_node_ceiling(input.quota(ns), input.owned_shards) - claimed);
        const std::int64_t room = std::min(capacity, headroom);
        if (room > 0) tenants.push_back({ns, routes, room, 0});
    }
    if (tenants.empty()) return {};

    // Deal the batch one row at a time, starting at a rotating tenant.
    std::int64_t budget = input.batch_size;
    const std::size_t start = input.rotation % tenants.size();
    bool dealt = true;
    while (budget > 0 && dealt) {
        dealt = false;
        for (std::size_t k = 0; k < tenants.size() && budget > 0; ++k) {
            auto& tenant = tenants[(start + k) % tenants.size()];
            if (tenant.share < tenant.room) {
                ++tenant.share;
                --budget;
                dealt = true;
            }
        }
    }

    // Within a tenant, deal its share over its routes the same way, bounded by capacity.
    std::vector<PlannedClaim> plan;
    for (const auto& tenant : tenants) {
        std::vector<std::int32_t> limits(tenant.routes.size(), 0);
        std::int64_t left = tenant.share;
        bool progress = true;
        while (left > 0 && progress) {
            progress = false;
            for (std::size_t r = 0; r < tenant.routes.size() && left > 0; ++r) {
                if (limits[r] < input.routes[tenant.routes[r]].capacity) {
                    ++limits[r];
                    --left;
                    progress = true;
                }
            }
        }
        for (std::size_t r = 0; r < tenant.routes.size(); ++r) {
            if (limits[r] > 0) plan.push_back({input.routes[tenant.routes[r]].scope, limits[r]});
        }
    }
    return plan;
}

}  // namespace outboxd::dispatch
