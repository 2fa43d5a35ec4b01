#include "outboxd/store/maintenance_store.hpp"

#include <algorithm>

#include "maintenance_sql.hpp"
#include "outboxd/store/store_error.hpp"
#include "pg_codec.hpp"
#include "pg_session.hpp"
#include "row_codec.hpp"

namespace outboxd::store {

using namespace codec;

MaintenanceStore::ReconcileWork MaintenanceStore::reconcile_work() {
    return session_.pg().autocommit(sql::kReconcileWork, [&](pqxx::nontransaction& tx) {
        const auto row = tx.exec_prepared1(std::string{sql::kReconcileWork.name});
        return ReconcileWork{row[0].as<bool>(), row[1].as<bool>()};
    });
}

std::vector<OutboxRow> MaintenanceStore::rearm_stale_claimed(
    const Owner& owner, std::chrono::milliseconds older_than, std::int32_t limit,
    std::chrono::milliseconds lease_grace) {
    check_limit(limit);
    if (limit == 0 || owner.ranges.empty()) return {};
    return session_.pg().autocommit(sql::kRearmStaleClaimed, [&](pqxx::nontransaction& tx) {
        return decode_rows_in_claim_order(tx.exec_prepared(
            std::string{sql::kRearmStaleClaimed.name}, owner.incarnation,
            owner.ranges.to_multirange(), millis(older_than), limit, millis(lease_grace)));
    });
}

std::vector<OutboxRow> MaintenanceStore::rearm_orphaned(const Owner& owner,
                                                        std::chrono::milliseconds liveness,
                                                        std::int32_t limit) {
    check_limit(limit);
    if (limit == 0 || owner.ranges.empty()) return {};
    return session_.pg().autocommit(sql::kRearmOrphaned, [&](pqxx::nontransaction& tx) {
        return decode_rows_in_claim_order(
            tx.exec_prepared(std::string{sql::kRearmOrphaned.name}, owner.incarnation,
                             owner.ranges.to_multirange(), millis(liveness), limit));
    });
}

CancelledRows MaintenanceStore::settle_cancelled(const Owner& owner) {
    if (owner.ranges.empty()) return {};
    return decode_cancelled(
        session_.pg().autocommit(sql::kSettleCancelled, [&](pqxx::nontransaction& tx) {
            return tx.exec_prepared(std::string{sql::kSettleCancelled.name}, owner.incarnation,
                                    owner.ranges.to_multirange());
        }));
}

std::map<std::string, MaintenanceStore::NamespaceCounts> MaintenanceStore::count_live_by_namespace(
    const ShardRanges& ranges) {
    std::map<std::string, NamespaceCounts> counts;
    if (ranges.empty()) return counts;
    const auto result = session_.pg().transact(sql::kCountLiveByNamespace, [&](pqxx::work& tx) {
        return tx.exec_prepared(std::string{sql::kCountLiveByNamespace.name},
                                ranges.to_multirange());
    });
    for (const auto& r : result) {
        counts[r[0].as<std::string>()] = {r[1].as<std::int64_t>(), r[2].as<std::int64_t>()};
    }
    return counts;
}

std::int64_t MaintenanceStore::let_go_waiting(const ShardRanges& ranges,
                                              const std::vector<std::string>& ordered,
                                              const std::vector<std::string>& skip,
                                              std::int32_t limit) {
    check_limit(limit);
    if (limit == 0 || ranges.empty() || ordered.empty()) return 0;
    return session_.pg().autocommit(sql::kLetGoWaiting, [&](pqxx::nontransaction& tx) {
        return static_cast<std::int64_t>(
            tx.exec_prepared(std::string{sql::kLetGoWaiting.name}, ranges.to_multirange(),
                             pg::text_array(ordered), pg::text_array(skip), limit)
                .size());
    });
}

std::int64_t MaintenanceStore::release_unordered(const ShardRanges& ranges,
                                                 const std::vector<std::string>& ordered,
                                                 std::int32_t limit) {
    check_limit(limit);
    if (limit == 0 || ranges.empty()) return 0;
    return session_.pg().autocommit(sql::kReleaseUnordered, [&](pqxx::nontransaction& tx) {
        return static_cast<std::int64_t>(tx.exec_prepared(std::string{sql::kReleaseUnordered.name},
                                                          ranges.to_multirange(),
                                                          pg::text_array(ordered), limit)
                                             .size());
    });
}

std::map<std::string, std::int64_t> MaintenanceStore::count_blocked_workflows(
    const ShardRanges& ranges, const std::vector<std::string>& blocking) {
    std::map<std::string, std::int64_t> counts;
    if (ranges.empty() || blocking.empty()) return counts;
    const auto result =
        session_.pg().autocommit(sql::kCountBlockedWorkflows, [&](pqxx::nontransaction& tx) {
            return tx.exec_prepared(std::string{sql::kCountBlockedWorkflows.name},
                                    ranges.to_multirange(), pg::text_array(blocking));
        });
    for (const auto& r : result) counts[r[0].as<std::string>()] = r[1].as<std::int64_t>();
    return counts;
}

std::int64_t MaintenanceStore::delete_finished(std::chrono::milliseconds older_than,
                                               std::int32_t limit) {
    check_limit(limit);
    if (limit == 0) return 0;
    return session_.pg().transact(sql::kDeleteFinished, [&](pqxx::work& tx) {
        return static_cast<std::int64_t>(
            tx.exec_prepared(std::string{sql::kDeleteFinished.name}, millis(older_than), limit)
                .affected_rows());
    });
}

MaintenanceStore::PrunedMarkers MaintenanceStore::prune_markers(
    std::chrono::milliseconds older_than) {
    return session_.pg().autocommit(sql::kPruneMarkers, [&](pqxx::nontransaction& tx) {
        const auto r = tx.exec_prepared1(std::string{sql::kPruneMarkers.name}, millis(older_than));
        return PrunedMarkers{r[0].as<std::int64_t>(), r[1].as<std::int64_t>()};
    });
}

}  // namespace outboxd::store
