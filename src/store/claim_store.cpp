#include "outboxd/store/claim_store.hpp"

#include <algorithm>
#include <cmath>

#include "claim_sql.hpp"
#include "outboxd/store/store_error.hpp"
#include "pg_codec.hpp"
#include "pg_session.hpp"
#include "row_codec.hpp"
#include "row_columns.hpp"

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

// The statement of one claim of `scope`: ordered or not, from the front or after a
// position, and, for a scope that leaves types out, the statement that does.
const Statement& claim_statement(const ClaimScope& scope, bool after, bool ordered) {
    if (!scope.excluded_types.empty()) {
        return ordered ? sql::kClaimOrderedExcluding : sql::kClaimScopedExcluding;
    }
    if (ordered) return after ? sql::kClaimOrderedAfter : sql::kClaimOrdered;
    return after ? sql::kClaimScopedAfter : sql::kClaimScoped;
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
    const std::string name{claim_statement(scope, after.has_value(), ordered).name};
    pqxx::result result;
    if (!scope.excluded_types.empty()) {
        const auto excluded = pg::text_array(scope.excluded_types);
        const auto at = after ? std::optional{pg::to_micros(after->visible_after)} : std::nullopt;
        const auto id = after ? std::optional{after->id} : std::nullopt;
        result = ordered ? tx.exec_prepared(name, owner.incarnation, ranges, namespace_name,
                                            task_queue, node, types, limit, scope.include_unpinned,
                                            block, at, id, excluded)
                         : tx.exec_prepared(name, owner.incarnation, ranges, namespace_name,
                                            task_queue, node, types, limit, scope.include_unpinned,
                                            at, id, excluded);
    } else if (ordered) {
        result = after
                     ? tx.exec_prepared(name, owner.incarnation, ranges, namespace_name, task_queue,
                                        node, types, limit, scope.include_unpinned, block,
                                        pg::to_micros(after->visible_after), after->id)
                     : tx.exec_prepared(name, owner.incarnation, ranges, namespace_name, task_queue,
                                        node, types, limit, scope.include_unpinned, block);
    } else {
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
    const auto& statement = claim_statement(scope, after.has_value(), false);
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
    const auto& statement = claim_statement(scope, after.has_value(), controls.ordered);
    if (!controls.limited()) {
        return session_.pg().autocommit(statement, [&](pqxx::nontransaction& tx) {
            return ControlledClaim{claim_in(tx, owner, scope, limit, after, controls.ordered,
                                            controls.block_on_dead_letter),
                                   {}};
        });
    }
    const auto ns = text_param(scope.namespace_name);
    const auto type = text_param(controls.activity_type);
    return session_.pg().transact(statement, [&](pqxx::work& tx) {
        ControlledClaim out;
        std::int64_t room = limit;
        if (controls.max_in_flight) {
            tx.exec_prepared(std::string{sql::kLockActivity.name}, ns, type);
            const auto claimed =
                tx.exec_prepared1(std::string{sql::kCountClaimedOfType.name}, ns, type)[0]
                    .as<std::int64_t>();
            out.limits.type_room = *controls.max_in_flight - claimed;
            room = std::min<std::int64_t>(room, *out.limits.type_room);
        }
        // Buckets in one order (the namespace's first), so that two claims never wait on
        // each other's.
        std::vector<std::pair<std::string, RateLimit>> buckets;
        if (controls.namespace_rate) buckets.emplace_back("", *controls.namespace_rate);
        if (controls.type_rate) buckets.emplace_back(type, *controls.type_rate);
        for (const auto& [bucket_type, rate] : buckets) {
            if (room <= 0) break;
            const auto tokens = tx.exec_prepared1(std::string{sql::kTakeTokens.name}, ns,
                                                  bucket_type, rate.per_second, rate.burst)[0];
            const double got = tokens.is_null() ? 0.0 : tokens.as<double>();
            out.limits.buckets.push_back({rate, got});
            room = std::min(room, static_cast<std::int64_t>(std::floor(got)));
        }
        if (room > 0) {
            out.rows = claim_in(tx, owner, scope, static_cast<std::int32_t>(room), after,
                                controls.ordered, controls.block_on_dead_letter);
        }
        const auto taken = static_cast<double>(out.rows.size());
        if (taken > 0) {
            for (std::size_t i = 0; i < out.limits.buckets.size(); ++i) {
                tx.exec_prepared(std::string{sql::kSpendTokens.name}, ns, buckets[i].first, taken);
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
        // One-based, after the claimed columns.
        const auto route = r[claimed_column::count].as<std::int64_t>() - 1;
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
