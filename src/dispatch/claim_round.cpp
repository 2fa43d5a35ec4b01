#include "outboxd/dispatch/claim_round.hpp"

#include <set>

namespace outboxd::dispatch {

ClaimRoundResult claim_round(store::OutboxStore& store, const store::Owner& owner,
                             const std::vector<worker::Route>& routes,
                             const std::function<std::int64_t(const std::string&)>& quota,
                             std::int32_t batch_size, std::size_t rotation) {
    ClaimRoundResult result;
    if (routes.empty() || owner.ranges.empty()) return result;
    std::set<std::string> names;
    for (const auto& route : routes) names.insert(route.scope.namespace_name);
    const std::vector<std::string> namespaces(names.begin(), names.end());

    PlanInput input;
    input.routes = routes;
    input.claimed = store.count_claimed_by_namespace(namespaces, owner.ranges);
    input.quota = quota;
    input.owned_shards = owner.ranges.count();
    input.batch_size = batch_size;
    input.rotation = rotation;
    for (const auto& claim : plan_claims(input)) {
        auto rows = store.claim_scoped(owner, claim.scope, claim.limit);
        if (static_cast<std::int32_t>(rows.size()) == claim.limit) result.saturated = true;
        result.rows.insert(result.rows.end(), std::make_move_iterator(rows.begin()),
                           std::make_move_iterator(rows.end()));
    }
    return result;
}

}  // namespace outboxd::dispatch
