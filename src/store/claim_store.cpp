#include "outboxd/store/claim_store.hpp"

#include <algorithm>
#include <cmath>

#include "outbox_sql.hpp"
#include "outboxd/store/store_error.hpp"
#include "pg_codec.hpp"
#include "pg_session.hpp"
#include "row_codec.hpp"

namespace outboxd::store {

using namespace codec;

namespace {

// The per-route arrays of kClaimRoutes and kRoutesWithDueRows ($3..$7).
struct RouteArrays {
    pg::ArrayLiteral namespaces, queues, nodes, unpinned, types;

    void add(const ClaimScope& scope) {
        namespaces.add(text_param(scope.namespace_name));
        queues.add(text_param(scope.task_queue));
        nodes.add(scope.node);
        unpinned.add(std::string_view{scope.include_unpinned ? "t" : "f"});
        types.add(pg::text_array(scope.activity_types));
    }
};

}  // namespace

namespace {

// When a limit that left no room may leave some: a rate limit's next whole token, or, for a
// concurrency limit (whose rows end elsewhere, unseen), a short rest.
constexpr std::chrono::milliseconds kBusyTypeRest{20};
constexpr std::chrono::milliseconds kMinTokenWait{5};
constexpr std::chrono::milliseconds kTokenCadence{20};
constexpr double kMaxTokenWaitSeconds = 60;

// Until the bucket holds a claim's worth of tokens: what kTokenCadence brings (at least one,
// at most the burst), so that a fast rate is claimed in a few rows a claim, not one.
std::chrono::milliseconds token_wait(double tokens, const RateLimit& rate) {
    const double wanted = std::clamp(rate.per_second * kTokenCadence.count() / 1000.0, 1.0,
                                     static_cast<double>(rate.burst));
    // Capped: a rate set by plain SQL below the API's bound must not overflow the wait (the
    // route is looked at again then, and waits again).
    const double seconds =
        std::min(kMaxTokenWaitSeconds, std::max(0.0, wanted - tokens) / rate.per_second);
    return std::max(kMinTokenWait, std::chrono::milliseconds{
                                       static_cast<std::int64_t>(std::ceil(seconds * 1000))});
}

// One claim of `scope` in `tx`, ordered or not: what claim_scoped and claim_controlled run.
std::vector<OutboxRow> claim_in(pqxx::transaction_base& tx, const Owner& owner,
                                const ClaimScope& scope, std::int32_t limit,
                                const std::optional<ClaimPosition>& after, bool ordered,
                                bool block) {
    const auto namespace_name = text_param(scope.namespace_name);
    const auto task_queue = text_param(scope.task_queue);
    const auto node = scope.node ? std::optional{text_param(*scope.node)} : std::nullopt;
    const auto types = pg::text_array(scope.activity_types);
    const auto ranges = owner.ranges.to_multirange();
    pqxx::result result;
    if (ordered) {
        const auto& statement = after ? sql::kClaimOrderedAfter : sql::kClaimOrdered;
        const std::string name{statement.name};
        result = after
                     ? tx.exec_prepared(name, owner.incarnation, ranges, namespace_name, task_queue,
                                        node, types, limit, scope.include_unpinned, block,
                                        pg::to_micros(after->visible_after), after->id)
                     : tx.exec_prepared(name, owner.incarnation, ranges, namespace_name, task_queue,
                                        node, types, limit, scope.include_unpinned, block);
    } else {
        const auto& statement = after ? sql::kClaimScopedAfter : sql::kClaimScoped;
        const std::string name{statement.name};
        result = after ? tx.exec_prepared(name, owner.incarnation, ranges, namespace_name,
                                          task_queue, node, types, limit, scope.include_unpinned,
                                          pg::to_micros(after->visible_after), after->id)
                       : tx.exec_prepared(name, owner.incarnation, ranges, namespace_name,
                                          task_queue, node, types, limit, scope.include_unpinned);
    }
    return decode_claimed(result, owner.incarnation);
}

}  // namespace

std::vector<OutboxRow> ClaimStore::claim_scoped(const Owner& owner, const ClaimScope& scope,
                                                std::int32_t limit,
                                                std::optional<ClaimPosition> after) {
    check_limit(limit);
    if (limit == 0 || owner.ranges.empty()) return {};
    const auto& statement = after ? sql::kClaimScopedAfter : sql::kClaimScoped;
    return session_.pg().autocommit(statement, [&](pqxx::nontransaction& tx) {
        return claim_in(tx, owner, scope, limit, after, false, false);
    });
}

ClaimStore::ControlledClaim ClaimStore::claim_controlled(const Owner& owner,
                                                         const ClaimScope& scope,
                                                         std::int32_t limit,
                                                         std::optional<ClaimPosition> after,
                                                         const ClaimControls& controls) {
    check_limit(limit);
    if (limit == 0 || owner.ranges.empty()) return {};
    const auto& statement = controls.ordered
                                ? (after ? sql::kClaimOrderedAfter : sql::kClaimOrdered)
                                : (after ? sql::kClaimScopedAfter : sql::kClaimScoped);
    if (!controls.limited()) {
        return session_.pg().autocommit(statement, [&](pqxx::nontransaction& tx) {
            return ControlledClaim{claim_in(tx, owner, scope, limit, after, controls.ordered,
                                            controls.block_on_dead_letter),
                                   std::nullopt};
        });
    }
    const auto ns = text_param(scope.namespace_name);
    const auto type = text_param(controls.activity_type);
    return session_.pg().transact(statement, [&](pqxx::work& tx) {
        ControlledClaim out;
        std::int64_t room = limit;
        std::int64_t type_room = limit;  // what the type's concurrency limit leaves
        if (controls.max_in_flight) {
            tx.exec_prepared(std::string{sql::kLockActivity.name}, ns, type);
            const auto claimed =
                tx.exec_prepared1(std::string{sql::kCountClaimedOfType.name}, ns, type)[0]
                    .as<std::int64_t>();
            type_room = *controls.max_in_flight - claimed;
            room = std::min<std::int64_t>(room, type_room);
            if (room <= 0) {
                out.wait = kBusyTypeRest;
                out.full = true;
            }
        }
        // Buckets in one order (the namespace's first), so that two claims never wait on
        // each other's.
        struct Bucket {
            std::string type;
            RateLimit rate;
            double tokens = 0;
        };
        std::vector<Bucket> buckets;
        if (controls.namespace_rate) buckets.push_back({"", *controls.namespace_rate, 0});
        if (controls.type_rate) buckets.push_back({type, *controls.type_rate, 0});
        for (auto& bucket : buckets) {
            if (room <= 0) break;
            const auto tokens =
                tx.exec_prepared1(std::string{sql::kTakeTokens.name}, ns, bucket.type,
                                  bucket.rate.per_second, bucket.rate.burst)[0];
            bucket.tokens = tokens.is_null() ? 0.0 : tokens.as<double>();
            room = std::min(room, static_cast<std::int64_t>(std::floor(bucket.tokens)));
            if (room <= 0) out.wait = token_wait(bucket.tokens, bucket.rate);
        }
        if (room > 0) {
            out.rows = claim_in(tx, owner, scope, static_cast<std::int32_t>(room), after,
                                controls.ordered, controls.block_on_dead_letter);
        }
        const auto taken = static_cast<double>(out.rows.size());
        // Filled to its limit: the next claim waits for a slot instead of finding none.
        if (controls.max_in_flight && type_room > 0 &&
            static_cast<std::int64_t>(out.rows.size()) >= type_room) {
            out.wait = kBusyTypeRest;
            out.full = true;
        }
        for (const auto& bucket : buckets) {
            const double left = std::max(0.0, bucket.tokens - taken);
            if (taken > 0)
                tx.exec_prepared(std::string{sql::kSpendTokens.name}, ns, bucket.type, taken);
            // Spent: the next claim waits for tokens instead of finding none.
            if (taken > 0 && left < 1) {
                const auto wait = token_wait(left, bucket.rate);
                out.wait = out.wait ? std::max(*out.wait, wait) : wait;
            }
        }
        return out;
    });
}

std::vector<std::vector<OutboxRow>> ClaimStore::claim_routes(const Owner& owner,
                                                             std::span<const RouteClaim> claims) {
    std::vector<std::vector<OutboxRow>> out(claims.size());
    if (claims.empty() || owner.ranges.empty()) return out;
    RouteArrays routes;
    pg::ArrayLiteral limits, after_us, after_ids;
    for (const auto& claim : claims) {
        check_limit(claim.limit);
        routes.add(claim.scope);
        limits.add(std::int64_t{claim.limit});
        if (claim.after) {
            after_us.add(pg::to_micros(claim.after->visible_after));
            after_ids.add(claim.after->id);
        } else {
            after_us.add_null();
            after_ids.add_null();
        }
    }
    const auto result = session_.pg().autocommit(sql::kClaimRoutes, [&](pqxx::nontransaction& tx) {
        return tx.exec_prepared(std::string{sql::kClaimRoutes.name}, owner.incarnation,
                                owner.ranges.to_multirange(), routes.namespaces.str(),
                                routes.queues.str(), routes.nodes.str(), routes.unpinned.str(),
                                routes.types.str(), limits.str(), after_us.str(), after_ids.str());
    });
    for (const auto& r : result) {
        const auto route = r[17].as<std::int64_t>() - 1;  // ordinals are one-based
        if (route < 0 || static_cast<std::size_t>(route) >= claims.size()) {
            throw DecodeError("outbox_claim_routes: route ordinal " + std::to_string(route + 1) +
                              " out of range");
        }
        out[static_cast<std::size_t>(route)].push_back(decode_claimed_row(r, owner.incarnation));
    }
    for (auto& rows : out) sort_claim_order(rows);
    return out;
}

std::vector<std::size_t> ClaimStore::routes_with_due_rows(const Owner& owner,
                                                          std::span<const ClaimScope> scopes) {
    std::vector<std::size_t> out;
    if (scopes.empty() || owner.ranges.empty()) return out;
    RouteArrays routes;
    for (const auto& scope : scopes) routes.add(scope);
    const auto result =
        session_.pg().autocommit(sql::kRoutesWithDueRows, [&](pqxx::nontransaction& tx) {
            return tx.exec_prepared(std::string{sql::kRoutesWithDueRows.name}, owner.incarnation,
                                    owner.ranges.to_multirange(), routes.namespaces.str(),
                                    routes.queues.str(), routes.nodes.str(), routes.unpinned.str(),
                                    routes.types.str());
        });
    for (const auto& r : result)
        out.push_back(static_cast<std::size_t>(r[0].as<std::int64_t>() - 1));
    std::sort(out.begin(), out.end());
    return out;
}

std::map<std::string, std::int64_t> ClaimStore::count_claimed_by_namespace(
    std::span<const std::string> namespaces, const ShardRanges& ranges) {
    std::map<std::string, std::int64_t> counts;
    for (const auto& ns : namespaces) counts.emplace(ns, 0);
    if (namespaces.empty() || ranges.empty()) return counts;
    const auto result =
        session_.pg().autocommit(sql::kCountClaimedByNamespace, [&](pqxx::nontransaction& tx) {
            return tx.exec_prepared(std::string{sql::kCountClaimedByNamespace.name},
                                    pg::text_array(namespaces), ranges.to_multirange());
        });
    for (const auto& r : result) counts[r[0].as<std::string>()] = r[1].as<std::int64_t>();
    return counts;
}

std::int64_t ClaimStore::release_claims_after(const Owner& owner, std::int64_t token,
                                              std::span<const std::int64_t> kept) {
    pg::ArrayLiteral kept_tokens;
    for (const auto kept_token : kept) kept_tokens.add(kept_token);
    return session_.pg().autocommit(sql::kReleaseClaimsAfter, [&](pqxx::nontransaction& tx) {
        return static_cast<std::int64_t>(
            tx.exec_prepared(std::string{sql::kReleaseClaimsAfter.name}, owner.incarnation, token,
                             kept_tokens.str())
                .affected_rows());
    });
}

}  // namespace outboxd::store
