#pragma once

// The claims lane's statements: claim due rows of routes, probe which routes have any, count
// claimed rows, and hand back claims a failed round may have left unseen. One round trip
// each. See OutboxSession for threads, errors and time.

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "outboxd/store/delivery_controls.hpp"
#include "outboxd/store/outbox_row.hpp"
#include "outboxd/store/outbox_session.hpp"

namespace outboxd::store {

class ClaimStore {
public:
    explicit ClaimStore(OutboxSession& session) : session_(session) {}

    // Connects now (see OutboxSession::connect).
    void connect() { session_.connect(); }

    // Claims up to `limit` due pending rows inside `scope`; with `after`, only rows
    // past that position in claim order (visible_after, id): the index scan starts there
    // instead of stepping over every row claimed before it (see ClaimCursor). Rows of
    // paused or cancelled workflows are skipped inside the statement, so held rows never
    // take a slot of the LIMIT.
    std::vector<OutboxRow> claim_scoped(const Owner& owner, const ClaimScope& scope,
                                        std::int32_t limit,
                                        std::optional<ClaimPosition> after = std::nullopt);

    // Claims of several routes in one statement: each claim takes up to its limit of due rows
    // in its scope (after its position, when set). Returns, per claim (same order), its rows
    // in claim order.
    struct RouteClaim {
        ClaimScope scope;
        std::int32_t limit = 0;
        std::optional<ClaimPosition> after;
    };
    std::vector<std::vector<OutboxRow>> claim_routes(const Owner& owner,
                                                     std::span<const RouteClaim> claims);

    // How one claim is bounded beyond its limit (README, "Delivery controls").
    struct ClaimControls {
        // Ordered delivery: only the next row of each workflow is claimed; rows found behind
        // an earlier one wait. With block, a dead letter holds its workflow's later rows.
        bool ordered = false;
        bool block_on_dead_letter = true;
        // Limits of (namespace, activity_type): the scope claims that one type only.
        std::string activity_type;
        std::optional<std::int32_t> max_in_flight;
        std::optional<RateLimit> type_rate;
        std::optional<RateLimit> namespace_rate;  // bucket (namespace, '')

        [[nodiscard]] bool limited() const { return max_in_flight || type_rate || namespace_rate; }
    };
    // What a limited claim's transaction saw of its limits: facts, not a verdict. When the
    // part may claim again is the claim path's to judge (dispatch::ClaimLimits).
    struct LimitFacts {
        // max_in_flight less the type's rows claimed when the claim began (set exactly when
        // the claim has a max_in_flight).
        std::optional<std::int64_t> type_room;
        // The token buckets read, in order (the namespace's first), with their tokens when
        // read. A bucket is read only while the limits before it left room.
        struct Bucket {
            RateLimit rate;
            double tokens = 0;
        };
        std::vector<Bucket> buckets;
    };
    struct ControlledClaim {
        std::vector<OutboxRow> rows;
        LimitFacts limits;
    };
    // A claim of one route under `controls`: ordered and/or limited. A limited claim is one
    // transaction: the type's advisory lock and claimed count, the buckets' tokens (locked),
    // the claim of at most what they leave, the buckets debited by what it took: exact
    // across nodes. It reports what it saw of the limits (LimitFacts).
    ControlledClaim claim_controlled(const Owner& owner, const ClaimScope& scope,
                                     std::int32_t limit, std::optional<ClaimPosition> after,
                                     const ClaimControls& controls);
    // Which of `scopes` have a row a claim would take now on the owner's leased shards (one
    // index probe each). Returns their indices, ascending.
    std::vector<std::size_t> routes_with_due_rows(const Owner& owner,
                                                  std::span<const ClaimScope> scopes);

    // Claimed rows per namespace in `ranges`, in one grouped query: exactly one entry per
    // requested namespace (0 when none).
    std::map<std::string, std::int64_t> count_claimed_by_namespace(
        std::span<const std::string> namespaces, const ShardRanges& ranges);

    // Hands back (pending, attempt unchanged, in its place in line) every row claimed by
    // `owner`'s incarnation under a token above `token`, except the `kept` ones: after a
    // claim statement failed with its outcome unknown, the rows it may have claimed, which
    // the claimer never saw (`kept`: claims above `token` it did see, from claims that ran
    // beside the failed one). Only while the claimer runs no other claim. Returns how many
    // rows it released.
    std::int64_t release_claims_after(const Owner& owner, std::int64_t token,
                                      std::span<const std::int64_t> kept = {});

private:
    OutboxSession& session_;
};

}  // namespace outboxd::store
