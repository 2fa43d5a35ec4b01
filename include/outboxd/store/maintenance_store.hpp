#pragma once

// A node's upkeep of the rows on its shards: re-arm claims nobody will answer, settle rows
// of cancelled workflows, count the live backlog, delete finished rows past retention. See
// OutboxSession for threads, errors and time.

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "outboxd/config/defaults.hpp"
#include "outboxd/store/outbox_row.hpp"
#include "outboxd/store/outbox_session.hpp"

namespace outboxd::store {

class MaintenanceStore {
public:
    explicit MaintenanceStore(OutboxSession& session) : session_(session) {}

    // What a reconcile may find: whether any row is claimed, and whether any workflow is
    // cancelled. False means there is nothing of that kind to look at now.
    struct ReconcileWork {
        bool claims = true;
        bool cancelled = true;
    };
    ReconcileWork reconcile_work();

    // Re-arms rows on shards leased to `owner` claimed more than `older_than` ago, whoever
    // holds them, to pending, due at once and in their old place in line (visible_after
    // kept, it is past), attempt preserved, claim cleared; a claim whose holder wrote a
    // lease for it (write_leases) instead once that lease ended `lease_grace` ago. Returns
    // the re-armed rows.
    std::vector<OutboxRow> rearm_stale_claimed(
        const Owner& owner, std::chrono::milliseconds older_than, std::int32_t limit,
        std::chrono::milliseconds lease_grace = defaults::kStaleGrace);
    // Re-arms rows on the owner's leased shards claimed by an incarnation that has no live
    // heartbeat (younger than `liveness`) in dispatcher_nodes. Attempt preserved.
    std::vector<OutboxRow> rearm_orphaned(const Owner& owner, std::chrono::milliseconds liveness,
                                          std::int32_t limit);
    // Settles live rows of cancelled workflows on shards leased to `owner` (boot, takeover,
    // and rows staged after the cancel).
    CancelledRows settle_cancelled(const Owner& owner);

    // Both counts for every namespace with live rows, in one grouped query.
    struct NamespaceCounts {
        std::int64_t inflight = 0;
        std::int64_t claimed = 0;
    };
    std::map<std::string, NamespaceCounts> count_live_by_namespace(const ShardRanges& ranges);

    // Ordered delivery's backstop (README, "Delivery controls"): lets go, on `ranges`, the
    // first waiting row of each workflow of the `ordered` namespaces that nothing holds back
    // (dead letters hold unless their namespace is in `skip`); returns how many, at most
    // `limit`.
    std::int64_t let_go_waiting(const ShardRanges& ranges, const std::vector<std::string>& ordered,
                                const std::vector<std::string>& skip, std::int32_t limit);
    // Lets go waiting rows on `ranges` of namespaces not in `ordered`; at most `limit`.
    std::int64_t release_unordered(const ShardRanges& ranges,
                                   const std::vector<std::string>& ordered, std::int32_t limit);
    // Workflows held back by a dead letter on `ranges`, for each of `blocking` (ordered,
    // on_dead_letter block) with any.
    std::map<std::string, std::int64_t> count_blocked_workflows(
        const ShardRanges& ranges, const std::vector<std::string>& blocking);

    // Deletes up to `limit` rows finished more than `older_than` ago; returns how many.
    std::int64_t delete_finished(std::chrono::milliseconds older_than, std::int32_t limit);

    // Forgets cancel and pause markers older than `older_than` (a cancel counts from the last
    // row it settled) whose workflow has no pending or dead-lettered row left: rows staged
    // under the id later run. Returns how many of each.
    struct PrunedMarkers {
        std::int64_t cancels = 0;
        std::int64_t pauses = 0;
    };
    PrunedMarkers prune_markers(std::chrono::milliseconds older_than);

private:
    OutboxSession& session_;
};

}  // namespace outboxd::store
