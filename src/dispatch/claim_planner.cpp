#include "outboxd/dispatch/claim_planner.hpp"

#include <algorithm>

#include "outboxd/store/shard_ranges.hpp"

namespace outboxd::dispatch {
namespace {

// A route is offered at least this many rows of its namespace's share at once.
constexpr std::int64_t kMinRowsPerRoute = 16;

// `share` rows dealt a chunk at a time round the routes from `start`, each given at most
// room(r) (what it can take now); give(r, rows) books it. Returns the rows dealt.
template <typename Room, typename Give>
std::int64_t deal_chunks(std::int64_t share, std::size_t n, std::size_t start, Room room,
                         Give give) {
    std::int64_t left = share;
    bool progress = true;
    while (left > 0 && progress && n > 0) {
        progress = false;
        // Each pass splits what is left evenly over the routes that still have room.
        std::int64_t open = 0;
        for (std::size_t r = 0; r < n; ++r) open += room(r) > 0 ? 1 : 0;
        if (open == 0) break;
        const std::int64_t chunk =
            std::max((left + open - 1) / open, std::min<std::int64_t>(kMinRowsPerRoute, left));
        for (std::size_t k = 0; k < n && left > 0; ++k) {
            const auto r = (start + k) % n;
            const auto give_r = std::min({room(r), chunk, left});
            if (give_r <= 0) continue;
            give(r, give_r);
            left -= give_r;
            progress = true;
        }
    }
    return share - left;
}

// The free credit left in each pool the plan's routes draw on.
class PoolBook {
public:
    explicit PoolBook(const std::vector<worker::Route>& routes) {
        for (const auto& route : routes) {
            for (const auto& pool : route.pools) left_.try_emplace(pool.id, pool.free);
        }
    }
    // What `route` can take on top of the `given` rows it has: its capacity, within its pools.
    [[nodiscard]] std::int64_t room(const worker::Route& route, std::int64_t given) const {
        std::int64_t own = std::max<std::int64_t>(0, route.capacity - given);
        if (route.pools.empty()) return own;
        std::int64_t pooled = 0;
        for (const auto& pool : route.pools) pooled += std::max<std::int64_t>(0, left_.at(pool.id));
        return std::min(own, pooled);
    }
    // Books `rows` of `route` on its pools, the fullest first (the worker a row is most
    // likely placed with: the least loaded).
    void take(const worker::Route& route, std::int64_t rows) {
        std::vector<std::uint32_t> ids;
        for (const auto& pool : route.pools) ids.push_back(pool.id);
        std::sort(ids.begin(), ids.end(),
                  [this](auto a, auto b) { return left_.at(a) > left_.at(b); });
        for (const auto id : ids) {
            auto& left = left_.at(id);
            const auto drawn = std::min(rows, std::max<std::int64_t>(0, left));
            left -= drawn;
            rows -= drawn;
        }
    }
    // What routes can take together: pools counted once, each route within its capacity.
    [[nodiscard]] std::int64_t reach(const std::vector<const worker::Route*>& routes) const {
        std::int64_t own = 0;
        std::int64_t pooled_capacity = 0;
        std::map<std::uint32_t, std::int64_t> pools;
        for (const auto* route : routes) {
            if (route->pools.empty()) {
                own += std::max(0, route->capacity);
                continue;
            }
            pooled_capacity += std::max(0, route->capacity);
            for (const auto& pool : route->pools) pools.try_emplace(pool.id, left_.at(pool.id));
        }
        std::int64_t pooled = 0;
        for (const auto& [id, free] : pools) pooled += std::max<std::int64_t>(0, free);
        return own + std::min(pooled_capacity, pooled);
    }

private:
    std::map<std::uint32_t, std::int64_t> left_;
};

}  // namespace

std::vector<std::int32_t> deal_over_routes(std::int64_t share,
                                           const std::vector<std::int32_t>& capacity,
                                           std::size_t start) {
    std::vector<std::int32_t> limits(capacity.size(), 0);
    if (share <= 0) return limits;
    (void)deal_chunks(
        share, capacity.size(), start,
        [&](std::size_t r) { return std::int64_t{capacity[r]} - limits[r]; },
        [&](std::size_t r, std::int64_t rows) { limits[r] += static_cast<std::int32_t>(rows); });
    return limits;
}

std::map<std::string, std::int64_t> capacity_by_namespace(
    const std::vector<worker::Route>& routes) {
    const PoolBook pools(routes);
    std::map<std::string, std::vector<const worker::Route*>> by_namespace;
    for (const auto& route : routes) by_namespace[route.scope.namespace_name].push_back(&route);
    std::map<std::string, std::int64_t> out;
    for (const auto& [ns, of] : by_namespace) out[ns] = pools.reach(of);
    return out;
}

std::int64_t per_node_ceiling(std::int64_t quota, std::int32_t owned_shards) {
    if (quota <= 0 || owned_shards <= 0) return 0;
    return (quota * owned_shards + store::kShardCount - 1) / store::kShardCount;
}

std::vector<PlannedClaim> plan_claims(const PlanInput& input, FairShare& fair,
                                      RouteRotation* rotation) {
    PoolBook pools(input.routes);
    // Group routes by namespace; each namespace's room is what its routes can take, under
    // its headroom.
    std::map<std::string, std::vector<std::size_t>> by_namespace;
    for (std::size_t i = 0; i < input.routes.size(); ++i) {
        by_namespace[input.routes[i].scope.namespace_name].push_back(i);
    }
    std::vector<FairShare::Demand> demands;
    std::vector<const std::vector<std::size_t>*> routes_of;
    for (auto& [ns, routes] : by_namespace) {
        std::vector<const worker::Route*> of;
        for (const auto i : routes) of.push_back(&input.routes[i]);
        const auto claimed_it = input.claimed.find(ns);
        const std::int64_t claimed = claimed_it == input.claimed.end() ? 0 : claimed_it->second;
        const std::int64_t headroom = std::max<std::int64_t>(
            0, per_node_ceiling(input.quota(ns), input.owned_shards) - claimed);
        demands.push_back(
            {ns, input.weight ? input.weight(ns) : 1, std::min(pools.reach(of), headroom)});
        routes_of.push_back(&routes);
    }
    std::vector<const worker::Route*> all;
    for (const auto& route : input.routes) all.push_back(&route);
    const auto budget = std::min<std::int64_t>(input.batch_size, pools.reach(all));
    const auto shares = fair.deal(demands, budget);

    // Within a namespace, its share goes to its routes in chunks, each route bounded by its
    // capacity and its pools: each route of a round's statement is an index scan of its own,
    // which costs more than the rows it brings when they are few (300 routes x 3 rows took
    // 17-20 ms in psql where 1 route x 1,000 rows or 66 x 15 took 14). The route offered
    // first moves on by one every round, so that over rounds each route of the namespace is
    // served in turn; so does the namespace that draws first on shared pools.
    std::vector<std::vector<std::int32_t>> limits(demands.size());
    const auto n = demands.size();
    const std::size_t first = rotation && n > 0 ? rotation->next_namespace++ % n : 0;
    for (std::size_t k = 0; k < n; ++k) {
        const auto t = (first + k) % n;
        const auto& routes = *routes_of[t];
        const auto& ns = demands[t].namespace_name;
        limits[t].assign(routes.size(), 0);
        if (shares[t] <= 0) continue;
        std::size_t start = 0;
        if (rotation) start = rotation->next_route[ns]++ % routes.size();
        auto& given = limits[t];
        const auto dealt = deal_chunks(
            shares[t], routes.size(), start,
            [&](std::size_t r) { return pools.room(input.routes[routes[r]], given[r]); },
            [&](std::size_t r, std::int64_t rows) {
                pools.take(input.routes[routes[r]], rows);
                given[r] += static_cast<std::int32_t>(rows);
            });
        fair.refund(ns, shares[t] - dealt);
    }
    std::vector<PlannedClaim> plan;
    for (std::size_t t = 0; t < n; ++t) {
        const auto& routes = *routes_of[t];
        for (std::size_t r = 0; r < routes.size(); ++r) {
            if (limits[t][r] > 0) plan.push_back({input.routes[routes[r]].scope, limits[t][r]});
        }
    }
    if (rotation) {
        std::erase_if(rotation->next_route, [&by_namespace](const auto& entry) {
            return !by_namespace.contains(entry.first);
        });
    }
    return plan;
}

}  // namespace outboxd::dispatch
