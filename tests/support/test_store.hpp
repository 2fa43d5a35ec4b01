#pragma once

// Every outbox statement in one place, for tests: the node's stores (claims, outcomes,
// maintenance, admin) over one session, plus statements only tests run (claims of any
// route, single outcomes, counts and probes; tests/support/test_sql.hpp) on a connection
// of their own.

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "outboxd/store/admin_store.hpp"
#include "outboxd/store/claim_store.hpp"
#include "outboxd/store/maintenance_store.hpp"
#include "outboxd/store/outbox_session.hpp"
#include "outboxd/store/outcome_store.hpp"

namespace outboxd::store {
class PgSession;
}

namespace outboxd::test {

class TestStore {
public:
    using Commits = store::OutboxSession::Commits;
    using RouteClaim = store::ClaimStore::RouteClaim;

    explicit TestStore(const std::string& database_url, Commits commits = Commits::durable,
                       std::chrono::milliseconds statement_timeout = {});
    ~TestStore();
    TestStore(const TestStore&) = delete;
    TestStore& operator=(const TestStore&) = delete;

    store::OutboxSession session;
    store::ClaimStore claims{session};
    store::OutcomeStore outcomes{session};
    store::MaintenanceStore maintenance{session};
    store::AdminStore admin{session};

    // --- the node's statements, by their stores ---------------------------------------
    store::AppendResult append(std::span<const store::NewRow> rows) { return admin.append(rows); }
    std::optional<store::OutboxRow> find(std::string_view key) { return admin.find(key); }
    bool pause_workflow(std::string_view id) { return admin.pause_workflow(id); }
    bool resume_workflow(std::string_view id) { return admin.resume_workflow(id); }
    std::vector<std::string> cancel_workflow(std::string_view id) {
        return admin.cancel_workflow(id).keys;
    }
    std::vector<store::DeadLetter> list_dead_letters(std::optional<std::string_view> ns,
                                                     std::int32_t limit) {
        store::DeadLetterFilter filter;
        if (ns) filter.namespace_name = std::string{*ns};
        return admin.list_dead_letters(filter, limit);
    }
    std::vector<store::DeadLetter> list_dead_letters(const store::DeadLetterFilter& filter,
                                                     std::int32_t limit,
                                                     std::optional<store::DeadLetterCursor> after) {
        return admin.list_dead_letters(filter, limit, after);
    }
    std::int64_t requeue_dead_letters(const store::DeadLetterFilter& f, std::int32_t limit) {
        return admin.requeue_dead_letters(f, limit);
    }
    std::int64_t purge_dead_letters(const store::DeadLetterFilter& f, std::int32_t limit) {
        return admin.purge_dead_letters(f, limit);
    }
    bool requeue_dead_letter(std::string_view key) { return admin.requeue_dead_letter(key); }
    void put_namespace(const store::NamespaceSettings& s) { admin.put_namespace(s); }
    std::optional<store::NamespaceSettings> get_namespace(std::string_view name) {
        return admin.get_namespace(name);
    }
    std::vector<store::NamespaceSettings> list_namespaces() { return admin.list_namespaces(); }

    std::vector<store::OutboxRow> claim_scoped(
        const store::Owner& owner, const store::ClaimScope& scope, std::int32_t limit,
        std::optional<store::ClaimPosition> after = std::nullopt) {
        return claims.claim_scoped(owner, scope, limit, after);
    }
    std::vector<std::vector<store::OutboxRow>> claim_routes(const store::Owner& owner,
                                                            std::span<const RouteClaim> c) {
        return claims.claim_routes(owner, c);
    }
    std::vector<std::size_t> routes_with_due_rows(const store::Owner& owner,
                                                  std::span<const store::ClaimScope> scopes) {
        return claims.routes_with_due_rows(owner, scopes);
    }
    std::map<std::string, std::int64_t> count_claimed_by_namespace(
        std::span<const std::string> namespaces, const store::ShardRanges& ranges) {
        return claims.count_claimed_by_namespace(namespaces, ranges);
    }
    std::int64_t release_claims_after(const store::Owner& owner, std::int64_t token,
                                      std::span<const std::int64_t> kept = {}) {
        return claims.release_claims_after(owner, token, kept);
    }

    std::vector<bool> record_outcomes(std::span<const store::Outcome> o) {
        return outcomes.record_outcomes(o);
    }

    std::vector<store::OutboxRow> rearm_stale_claimed(const store::Owner& owner,
                                                      std::chrono::milliseconds older_than,
                                                      std::int32_t limit) {
        return maintenance.rearm_stale_claimed(owner, older_than, limit);
    }
    std::vector<store::OutboxRow> rearm_orphaned(const store::Owner& owner,
                                                 std::chrono::milliseconds liveness,
                                                 std::int32_t limit) {
        return maintenance.rearm_orphaned(owner, liveness, limit);
    }
    store::CancelledRows settle_cancelled(const store::Owner& owner) {
        return maintenance.settle_cancelled(owner);
    }
    std::map<std::string, store::MaintenanceStore::NamespaceCounts> count_live_by_namespace(
        const store::ShardRanges& ranges) {
        return maintenance.count_live_by_namespace(ranges);
    }
    std::int64_t delete_finished(std::chrono::milliseconds older_than, std::int32_t limit) {
        return maintenance.delete_finished(older_than, limit);
    }

    // --- statements only tests run -----------------------------------------------------
    // Claims up to `limit` due pending rows of any route, oldest visible_after first.
    std::vector<store::OutboxRow> claim(const store::Owner& owner, std::int32_t limit);
    // One outcome (record_outcomes of one).
    bool complete(store::ClaimRef ref);
    bool retry(store::ClaimRef ref, std::chrono::milliseconds delay, std::string_view error);
    bool fail(store::ClaimRef ref, std::string_view error);
    // Claimed rows in `ranges` claimed more than `older_than` ago, oldest first.
    std::vector<store::OutboxRow> list_stale_claimed(const store::ShardRanges& ranges,
                                                     std::chrono::milliseconds older_than,
                                                     std::int32_t limit);
    // Workflow ids with a pending or claimed row in `ranges`.
    std::vector<std::string> list_unsettled_workflow_ids(const store::ShardRanges& ranges);
    std::int64_t count_inflight(std::string_view ns, const store::ShardRanges& ranges);
    std::int64_t count_claimed(std::string_view ns, const store::ShardRanges& ranges);
    // Distinct (namespace, task_queue, node) of due pending rows; activity_types empty.
    std::vector<store::ClaimScope> pending_routes(const store::ShardRanges& ranges);
    bool is_paused(std::string_view workflow_id);

private:
    std::unique_ptr<store::PgSession> test_pg_;
};

}  // namespace outboxd::test
