#include "outboxd/dispatch/claim_round.hpp"

#include <algorithm>
#include <set>

#include "outboxd/store/store_error.hpp"
#include "outboxd/util/untrusted_text.hpp"

namespace outboxd::dispatch {

namespace {

// Whether some namespace's headroom under `claimed` is less than its routes could take,
// so that the ceiling, not the workers' credit, decides its share.
bool ceiling_binds(const PlanInput& input) {
    std::map<std::string, std::int64_t> capacity;
    for (const auto& route : input.routes) capacity[route.scope.namespace_name] += route.capacity;
    for (const auto& [ns, wanted] : capacity) {
        const auto claimed = input.claimed.find(ns);
        const auto headroom = per_node_ceiling(input.quota(ns), input.owned_shards) -
                              (claimed == input.claimed.end() ? 0 : claimed->second);
        if (headroom < std::min<std::int64_t>(wanted, input.batch_size)) return true;
    }
    return false;
}

// Why the database could not take `scope`'s names as parameters, if it could not.
std::optional<std::string> scope_problem(const store::ClaimScope& scope) {
    std::vector<std::string_view> names{scope.namespace_name, scope.task_queue};
    if (scope.node) names.push_back(*scope.node);
    names.insert(names.end(), scope.activity_types.begin(), scope.activity_types.end());
    for (const auto name : names) {
        if (name.find('\0') != std::string_view::npos) return "a route name contains a NUL byte";
        if (!util::is_valid_utf8(name)) return "a route name is not valid UTF-8";
    }
    return std::nullopt;
}

}  // namespace

ClaimRoundResult claim_round(store::OutboxStore& store, const store::Owner& owner,
                             const std::vector<worker::Route>& all_routes,
                             const std::function<std::int64_t(const std::string&)>& quota,
                             std::int32_t batch_size, std::size_t rotation, ClaimedTally& tally,
                             ClaimCursors* cursors, ClaimGenerations generations,
                             const std::map<std::string, std::int64_t>& settled) {
    ClaimRoundResult result;
    if (all_routes.empty() || owner.ranges.empty()) return result;
    // A scope the database could not even be asked about is refused here, before any
    // statement: one bad route must not fail the count that every route shares.
    std::vector<worker::Route> routes;
    for (const auto& route : all_routes) {
        if (auto problem = scope_problem(route.scope)) {
            result.refused.emplace_back(route.scope, *problem);
        } else {
            routes.push_back(route);
        }
    }
    if (routes.empty()) return result;
    std::set<std::string> names;
    for (const auto& route : routes) names.insert(route.scope.namespace_name);
    const std::vector<std::string> namespaces(names.begin(), names.end());

    const auto count = [&] {
        tally.upper = store.count_claimed_by_namespace(namespaces, owner.ranges);
        tally.ranges = owner.ranges;
        tally.generation = generations.ranges;
        tally.known = true;
        result.counted = true;
    };
    if (!tally.known || tally.ranges != owner.ranges || tally.generation != generations.ranges ||
        std::any_of(namespaces.begin(), namespaces.end(),
                    [&](const std::string& ns) { return !tally.upper.contains(ns); })) {
        count();
    } else {
        for (const auto& [ns, rows] : settled) {
            if (auto it = tally.upper.find(ns); it != tally.upper.end()) {
                it->second = std::max<std::int64_t>(0, it->second - rows);
            }
        }
    }

    PlanInput input;
    input.routes = routes;
    input.claimed = tally.upper;
    input.quota = quota;
    input.owned_shards = owner.ranges.count();
    input.batch_size = batch_size;
    input.rotation = rotation;
    if (!result.counted && ceiling_binds(input)) {
        count();
        input.claimed = tally.upper;
    }
    try {
        for (const auto& claim : plan_claims(input)) {
            const auto after = cursors ? cursors->start(claim.scope, ClaimCursors::Clock::now(),
                                                        generations.front)
                                       : std::nullopt;
            std::vector<store::OutboxRow> rows;
            try {
                rows = store.claim_scoped(owner, claim.scope, claim.limit, after);
            } catch (const store::UnavailableError&) {
                throw;
            } catch (const store::ConflictError&) {
                throw;
            } catch (const std::exception& error) {
                // Not the connection, not contention: this route's claim is refused (its data,
                // a trigger, a value the database cannot take). Claiming it again at once
                // would fail again, and must not stop every other route.
                result.refused.emplace_back(claim.scope, error.what());
                continue;
            }
            tally.upper[claim.scope.namespace_name] += static_cast<std::int64_t>(rows.size());
            const bool filled = static_cast<std::int32_t>(rows.size()) == claim.limit;
            if (cursors) {
                cursors->advance(claim.scope, rows, !after, filled, ClaimCursors::Clock::now(),
                                 generations.front);
            }
            result.from_front = result.from_front || !after;
            for (const auto& row : rows) result.last_token = std::max(result.last_token, row.claim_token);
            if (filled) result.saturated = true;
            result.rows.insert(result.rows.end(), std::make_move_iterator(rows.begin()),
                               std::make_move_iterator(rows.end()));
        }
    } catch (...) {
        tally.known = false;  // a failed claim may have claimed rows after all
        throw;
    }
    return result;
}

}  // namespace outboxd::dispatch
