#include "outboxd/dispatch/claim_round.hpp"

#include <algorithm>
#include <optional>
#include <set>

#include "outboxd/store/store_error.hpp"
#include "outboxd/util/untrusted_text.hpp"

namespace outboxd::dispatch {

namespace {

// Whether some namespace's headroom under `claimed` is less than its routes could take,
// so that the ceiling, not the workers' credit, decides its share.
bool ceiling_binds(const PlanInput& input) {
    for (const auto& [ns, wanted] : capacity_by_namespace(input.routes)) {
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

// Keeps the routes whose scope the database can be asked about; refuses the others.
std::vector<worker::Route> askable(const std::vector<worker::Route>& routes,
                                   ClaimRoundResult& result) {
    std::vector<worker::Route> out;
    out.reserve(routes.size());
    for (const auto& route : routes) {
        if (auto problem = scope_problem(route.scope)) {
            result.refused.emplace_back(route.scope, *problem);
        } else {
            out.push_back(route);
        }
    }
    return out;
}

// Runs `attempt`; a failure that is not the database's (store::TransientError: the
// connection, contention) is the route's own: refused, and the round goes on. The
// database's fails the round.
template <typename Attempt>
bool own_failure(const store::ClaimScope& scope, ClaimRoundResult& result, Attempt attempt) {
    try {
        attempt();
        return false;
    } catch (const store::TransientError&) {
        throw;
    } catch (const std::exception& error) {
        result.refused.emplace_back(scope, error.what());
        return true;
    }
}

// The probed routes with due rows, one statement for all; if that statement fails for a
// cause of its own, route by route, so that the route at fault is told apart.
std::vector<worker::Route> probe_routes(store::ClaimStore& store, const store::Owner& owner,
                                        const std::vector<worker::Route>& probe,
                                        ClaimRoundResult& result) {
    std::vector<store::ClaimScope> scopes;
    scopes.reserve(probe.size());
    for (const auto& route : probe) scopes.push_back(route.scope);
    std::vector<std::size_t> due;
    try {
        due = store.routes_with_due_rows(owner, scopes);
    } catch (const store::TransientError&) {
        throw;
    } catch (const std::exception&) {
        due.clear();
        for (std::size_t i = 0; i < scopes.size(); ++i) {
            std::vector<std::size_t> one;
            if (!own_failure(scopes[i], result,
                             [&] {
                                 one = store.routes_with_due_rows(owner, {&scopes[i], 1});
                             }) &&
                !one.empty()) {
                due.push_back(i);
            }
        }
    }
    std::vector<worker::Route> found;
    for (const auto i : due) {
        if (i >= probe.size()) continue;
        result.found.push_back(probe[i].scope);
        found.push_back(probe[i]);
    }
    return found;
}

// Each planned claim's rows: one statement for all of them (or the one), or, if that
// statement fails for a cause of its own, one per route, so that the route at fault is told
// apart and the others are claimed.
std::vector<std::optional<std::vector<store::OutboxRow>>> claim_plain(
    store::ClaimStore& store, const store::Owner& owner,
    const std::vector<store::ClaimStore::RouteClaim>& claims, ClaimRoundResult& result) {
    std::vector<std::optional<std::vector<store::OutboxRow>>> rows(claims.size());
    const auto one = [&](std::size_t i) {
        (void)own_failure(claims[i].scope, result, [&] {
            rows[i] = store.claim_scoped(owner, claims[i].scope, claims[i].limit, claims[i].after);
        });
    };
    if (claims.size() == 1) {
        one(0);
        return rows;
    }
    try {
        auto all = store.claim_routes(owner, claims);
        for (std::size_t i = 0; i < claims.size(); ++i) rows[i] = std::move(all[i]);
    } catch (const store::TransientError&) {
        throw;
    } catch (const std::exception&) {
        for (std::size_t i = 0; i < claims.size(); ++i) one(i);
    }
    return rows;
}

// The claims a controlled route is claimed with (README, "Delivery controls"): one per
// activity type of it with a limit of its own, then one for the rest of its types. Each
// carries the namespace's ordering and rate limit.
struct SubClaim {
    store::ClaimScope scope;
    store::ClaimStore::ClaimControls controls;
};

std::vector<SubClaim> sub_claims(const store::ClaimScope& scope,
                                 const store::DeliveryControls& controls) {
    std::vector<SubClaim> out;
    store::ClaimStore::ClaimControls base;
    base.ordered = controls.ordering == store::Ordering::workflow;
    base.block_on_dead_letter = controls.on_dead_letter == store::OnDeadLetter::block;
    base.namespace_rate = controls.rate_limit;
    // A scope of any type (a target that lists none) claims each limited type of the
    // namespace apart, and the rest without them.
    const bool any_type = scope.activity_types.empty();
    std::vector<std::string> types = scope.activity_types;
    if (any_type) {
        for (const auto& [type, policy] : controls.activities) types.push_back(type);
    }
    auto rest = scope;
    rest.activity_types.clear();
    for (const auto& type : types) {
        const auto policy = controls.activities.find(type);
        if (policy == controls.activities.end() ||
            (!policy->second.max_in_flight && !policy->second.rate_limit)) {
            if (!any_type) rest.activity_types.push_back(type);
            continue;
        }
        SubClaim sub{scope, base};
        sub.scope.activity_types = {type};
        sub.controls.activity_type = type;
        sub.controls.max_in_flight = policy->second.max_in_flight;
        sub.controls.type_rate = policy->second.rate_limit;
        out.push_back(std::move(sub));
        if (any_type) rest.excluded_types.push_back(type);
    }
    if (any_type || !rest.activity_types.empty()) out.push_back({std::move(rest), base});
    return out;
}

// A controlled route's claims, one after the other within its limit. A part the limits hold
// back (ClaimLimits) is skipped without a statement; what each claim saw of its limits
// decides when its part may claim again.
std::vector<store::OutboxRow> claim_controlled(store::ClaimStore& store, const store::Owner& owner,
                                               const store::ClaimStore::RouteClaim& claim,
                                               const store::DeliveryControls& controls,
                                               ClaimLimits::Parts& parts,
                                               ClaimRoundResult& result) {
    std::vector<store::OutboxRow> rows;
    const auto now = ClaimLimits::Clock::now();
    std::optional<std::chrono::milliseconds> soonest;
    const auto wait_at_most = [&soonest](std::chrono::milliseconds wait) {
        soonest = soonest ? std::min(*soonest, wait) : wait;
    };
    bool full = false;
    const auto& ns = claim.scope.namespace_name;
    for (const auto& sub : sub_claims(claim.scope, controls)) {
        const auto left = claim.limit - static_cast<std::int32_t>(rows.size());
        if (left <= 0) break;
        const auto& sc = sub.controls;
        if (const auto until =
                parts.held(ns, sc.activity_type, sc.namespace_rate.has_value(), now)) {
            wait_at_most(std::chrono::duration_cast<std::chrono::milliseconds>(*until - now));
            continue;
        }
        // Only a route claimed whole may keep its claim position: a part of its types would
        // read past rows of the others it never claimed.
        const auto after = sc.limited() ? std::nullopt : claim.after;
        auto claimed = store.claim_controlled(owner, sub.scope, left, after, sc);
        if (sc.limited()) {
            const auto verdict = ClaimLimits::judge(claimed.limits, claimed.rows.size());
            if (const auto wait = parts.learn(ns, sc, verdict, now)) wait_at_most(*wait);
            full = full || verdict.full;
        }
        rows.insert(rows.end(), std::make_move_iterator(claimed.rows.begin()),
                    std::make_move_iterator(claimed.rows.end()));
    }
    if (soonest) result.held.push_back({claim.scope, *soonest, full});
    return rows;
}

// Every planned claim's rows: the routes of namespaces without controls together (one
// statement), the controlled ones route by route.
std::vector<std::optional<std::vector<store::OutboxRow>>> claim_planned(
    store::ClaimStore& store, const store::Owner& owner,
    const std::vector<store::ClaimStore::RouteClaim>& claims, const ClaimRequest& request,
    ClaimLimits::Parts& parts, ClaimRoundResult& result) {
    if (request.controls.empty()) return claim_plain(store, owner, claims, result);
    std::vector<std::optional<std::vector<store::OutboxRow>>> rows(claims.size());
    std::vector<store::ClaimStore::RouteClaim> plain;
    std::vector<std::size_t> plain_at;
    for (std::size_t i = 0; i < claims.size(); ++i) {
        const auto controls = request.controls.find(claims[i].scope.namespace_name);
        if (controls == request.controls.end()) {
            plain.push_back(claims[i]);
            plain_at.push_back(i);
            continue;
        }
        (void)own_failure(claims[i].scope, result, [&] {
            rows[i] = claim_controlled(store, owner, claims[i], controls->second, parts, result);
        });
    }
    auto plain_rows = claim_plain(store, owner, plain, result);
    for (std::size_t k = 0; k < plain.size(); ++k) rows[plain_at[k]] = std::move(plain_rows[k]);
    return rows;
}

// Whether `scope`'s namespace limits some of its types (it is then claimed in parts).
bool has_limits(const ClaimRequest& request, const store::ClaimScope& scope) {
    const auto it = request.controls.find(scope.namespace_name);
    if (it == request.controls.end()) return false;
    const auto& controls = it->second;
    if (controls.rate_limit) return true;
    const auto limited = [&controls](const std::string& type) {
        const auto policy = controls.activities.find(type);
        return policy != controls.activities.end() &&
               (policy->second.max_in_flight || policy->second.rate_limit);
    };
    // Any type: limited when the namespace limits one.
    if (scope.activity_types.empty()) {
        return std::any_of(controls.activities.begin(), controls.activities.end(),
                           [&limited](const auto& entry) { return limited(entry.first); });
    }
    return std::any_of(scope.activity_types.begin(), scope.activity_types.end(), limited);
}

// Whether `scope` was held back by a limit this round (its rows are not all claimed).
bool held_back(const ClaimRoundResult& result, const store::ClaimScope& scope) {
    return std::any_of(
        result.held.begin(), result.held.end(),
        [&scope](const ClaimLimits::HeldRoute& held) { return held.scope == scope; });
}

// Adds one claim's rows to the result; true when the claim got every row it asked for. A
// route a limit held back is neither short (its rows are due) nor a reason to claim again
// at once (its limit says when).
bool collect(ClaimRoundResult& result, const store::ClaimStore::RouteClaim& claim,
             std::vector<store::OutboxRow>& rows) {
    const bool filled = static_cast<std::int32_t>(rows.size()) == claim.limit;
    result.from_front = result.from_front || !claim.after;
    for (const auto& row : rows) result.last_token = std::max(result.last_token, row.claim_token);
    if (held_back(result, claim.scope)) {
        // as said above
    } else if (filled) {
        result.saturated = true;
    } else {
        result.came_back_short.push_back(claim.scope);
    }
    result.rows.insert(result.rows.end(), std::make_move_iterator(rows.begin()),
                       std::make_move_iterator(rows.end()));
    return filled;
}

std::vector<std::string> namespaces_of(const std::vector<worker::Route>& routes) {
    std::set<std::string> names;
    for (const auto& route : routes) names.insert(route.scope.namespace_name);
    return {names.begin(), names.end()};
}

}  // namespace

ClaimRoundResult claim_round(store::ClaimStore& store, const ClaimRequest& request,
                             ClaimerState& state) {
    ClaimRoundResult result;
    result.parts = request.parts;  // handed back as the round leaves them
    const auto& owner = request.owner;
    if (owner.ranges.empty()) return result;
    auto routes = askable(request.routes, result);
    const auto probe = askable(request.probe, result);
    if (!probe.empty()) {
        for (auto& route : probe_routes(store, owner, probe, result))
            routes.push_back(std::move(route));
    }
    if (routes.empty()) return result;

    auto& tally = state.tally;
    const auto namespaces = namespaces_of(routes);
    const auto count = [&] {
        tally.upper = store.count_claimed_by_namespace(namespaces, owner.ranges);
        tally.ranges = owner.ranges;
        tally.generation = request.generations.ranges;
        tally.known = true;
        result.counted = true;
    };
    if (!tally.known || tally.ranges != owner.ranges ||
        tally.generation != request.generations.ranges ||
        std::any_of(namespaces.begin(), namespaces.end(),
                    [&](const std::string& ns) { return !tally.upper.contains(ns); })) {
        count();
    } else {
        for (const auto& [ns, rows] : request.settled) {
            if (auto it = tally.upper.find(ns); it != tally.upper.end()) {
                it->second = std::max<std::int64_t>(0, it->second - rows);
            }
        }
        for (const auto& [ns, rows] : request.claimed_apart) {
            if (auto it = tally.upper.find(ns); it != tally.upper.end()) it->second += rows;
        }
    }

    PlanInput input;
    input.routes = std::move(routes);
    input.claimed = tally.upper;
    input.quota = request.quota;
    input.weight = request.weight;
    input.owned_shards = owner.ranges.count();
    input.batch_size = request.batch_size;
    if (!result.counted && ceiling_binds(input)) {
        count();
        input.claimed = tally.upper;
    }
    const auto plan = plan_claims(input, state.fair, &state.rotation);
    std::vector<store::ClaimStore::RouteClaim> claims;
    claims.reserve(plan.size());
    const auto now = ClaimCursors::Clock::now();
    for (const auto& planned : plan) {
        claims.push_back({planned.scope, planned.limit,
                          state.cursors.start(planned.scope, now, request.generations.front)});
    }
    try {
        auto claimed = claim_planned(store, owner, claims, request, result.parts, result);
        const auto done = ClaimCursors::Clock::now();
        for (std::size_t i = 0; i < claims.size(); ++i) {
            if (!claimed[i]) continue;  // refused
            auto& rows = *claimed[i];
            const auto& claim = claims[i];
            tally.upper[claim.scope.namespace_name] += static_cast<std::int64_t>(rows.size());
            const bool filled = static_cast<std::int32_t>(rows.size()) == claim.limit;
            // A route claimed in parts under limits read from the front: its position stays.
            if (!has_limits(request, claim.scope)) {
                state.cursors.advance(claim.scope, rows, !claim.after, filled, done,
                                      request.generations.front);
            }
            (void)collect(result, claim, rows);
        }
    } catch (...) {
        tally.known = false;  // a failed claim may have claimed rows after all
        throw;
    }
    return result;
}

ClaimRoundResult claim_apart(store::ClaimStore& store, const ClaimRequest& request) {
    ClaimRoundResult result;
    const auto& owner = request.owner;
    if (owner.ranges.empty()) return result;
    auto routes = askable(request.routes, result);
    if (routes.empty()) return result;
    PlanInput input;
    input.claimed = store.count_claimed_by_namespace(namespaces_of(routes), owner.ranges);
    result.counted = true;
    input.routes = std::move(routes);
    input.quota = request.quota;
    input.owned_shards = owner.ranges.count();
    input.batch_size = request.batch_size;
    FairShare once;  // nothing carried: each claim apart stands alone
    std::vector<store::ClaimStore::RouteClaim> claims;
    for (const auto& planned : plan_claims(input, once))
        claims.push_back({planned.scope, planned.limit, std::nullopt});
    ClaimLimits::Parts parts;  // none carried: each claim apart asks the database
    auto claimed = claim_planned(store, owner, claims, request, parts, result);
    for (std::size_t i = 0; i < claims.size(); ++i) {
        if (!claimed[i]) continue;  // refused
        // A route that filled its claim has a backlog: it joins the claimer's rounds.
        if (collect(result, claims[i], *claimed[i])) result.found.push_back(claims[i].scope);
    }
    return result;
}

}  // namespace outboxd::dispatch
