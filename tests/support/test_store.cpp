#include "test_store.hpp"

#include "store/pg_session.hpp"
#include "store/row_codec.hpp"
#include "test_sql.hpp"

namespace outboxd::test {

using namespace store::codec;

TestStore::TestStore(const std::string& database_url, Commits commits,
                     std::chrono::milliseconds statement_timeout)
    : session(database_url, store::OutboxSession::Uses::all, commits, statement_timeout),
      test_pg_(std::make_unique<store::PgSession>(
          database_url, sql::kTestStatements, std::vector<std::string>{"SET enable_sort = off"})) {}

TestStore::~TestStore() = default;

std::vector<store::OutboxRow> TestStore::claim(const store::Owner& owner, std::int32_t limit) {
    check_limit(limit);
    if (limit == 0 || owner.ranges.empty()) return {};
    return test_pg_->autocommit(sql::kClaim, [&](pqxx::nontransaction& tx) {
        return decode_claimed(tx.exec_prepared(std::string{sql::kClaim.name}, owner.incarnation,
                                               owner.ranges.to_multirange(), limit),
                              owner.incarnation);
    });
}

bool TestStore::complete(store::ClaimRef ref) {
    const auto outcome = store::Outcome::done(ref);
    return outcomes.record_outcomes({&outcome, 1}).front();
}

bool TestStore::retry(store::ClaimRef ref, std::chrono::milliseconds delay,
                      std::string_view error) {
    const auto outcome = store::Outcome::retry(ref, delay, std::string{error});
    return outcomes.record_outcomes({&outcome, 1}).front();
}

bool TestStore::fail(store::ClaimRef ref, std::string_view error) {
    const auto outcome = store::Outcome::fail(ref, std::string{error});
    return outcomes.record_outcomes({&outcome, 1}).front();
}

std::vector<store::OutboxRow> TestStore::list_stale_claimed(const store::ShardRanges& ranges,
                                                            std::chrono::milliseconds older_than,
                                                            std::int32_t limit) {
    check_limit(limit);
    if (limit == 0 || ranges.empty()) return {};
    return test_pg_->transact(sql::kListStaleClaimed, [&](pqxx::work& tx) {
        std::vector<store::OutboxRow> rows;
        for (const auto& r : tx.exec_prepared(std::string{sql::kListStaleClaimed.name},
                                              ranges.to_multirange(), millis(older_than), limit)) {
            rows.push_back(decode_row(r));
        }
        return rows;
    });
}

std::vector<std::string> TestStore::list_unsettled_workflow_ids(const store::ShardRanges& ranges) {
    if (ranges.empty()) return {};
    return test_pg_->transact(sql::kListUnsettledWorkflows, [&](pqxx::work& tx) {
        return decode_texts(tx.exec_prepared(std::string{sql::kListUnsettledWorkflows.name},
                                             ranges.to_multirange()));
    });
}

namespace {

std::int64_t count(store::PgSession& pg, const store::Statement& statement, std::string_view ns,
                   const store::ShardRanges& ranges) {
    if (ranges.empty()) return 0;
    return pg.transact(statement, [&](pqxx::work& tx) {
        return tx
            .exec_prepared1(std::string{statement.name}, text_param(ns), ranges.to_multirange())[0]
            .as<std::int64_t>();
    });
}

}  // namespace

std::int64_t TestStore::count_inflight(std::string_view ns, const store::ShardRanges& ranges) {
    return count(*test_pg_, sql::kCountInflight, ns, ranges);
}

std::int64_t TestStore::count_claimed(std::string_view ns, const store::ShardRanges& ranges) {
    return count(*test_pg_, sql::kCountClaimed, ns, ranges);
}

std::vector<store::ClaimScope> TestStore::pending_routes(const store::ShardRanges& ranges) {
    if (ranges.empty()) return {};
    const auto result = test_pg_->transact(sql::kPendingRoutes, [&](pqxx::work& tx) {
        return tx.exec_prepared(std::string{sql::kPendingRoutes.name}, ranges.to_multirange());
    });
    std::vector<store::ClaimScope> routes;
    routes.reserve(result.size());
    for (const auto& r : result) {
        routes.push_back({r[0].as<std::string>(),
                          r[1].as<std::string>(),
                          r[2].is_null() ? std::nullopt : std::optional{r[2].as<std::string>()},
                          {}});
    }
    return routes;
}

bool TestStore::is_paused(std::string_view workflow_id) {
    return test_pg_->transact(sql::kIsPaused, [&](pqxx::work& tx) {
        return !tx.exec_prepared(std::string{sql::kIsPaused.name}, text_param(workflow_id)).empty();
    });
}

}  // namespace outboxd::test
