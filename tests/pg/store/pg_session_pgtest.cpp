// A store session plans each prepared statement the way the statement says.

#include <array>
#include <optional>
#include <string>

#include <catch2/catch.hpp>

#include "store/claim_sql.hpp"
#include "store/outcome_sql.hpp"
#include "store/pg_session.hpp"
#include "test_database.hpp"

using namespace outboxd;
using store::Plan;
using store::Statement;

namespace {

// On a table this small the planner prefers a sequential scan for `id = ANY (…)`.
constexpr std::string_view kCountSql = "SELECT count(*) FROM outbox WHERE id = ANY ($1::bigint[])";
constexpr Statement kGeneric{"test_generic", kCountSql, Plan::generic};
constexpr Statement kCustom{"test_custom", kCountSql};
constexpr std::array kStatements{kGeneric, kCustom};

struct Planning {
    long long generic_plans = 0;
    long long custom_plans = 0;
};

// How often PostgreSQL planned `name` each way on the session's connection, read without
// switching its mode (`now` is the mode the last statement left it in).
Planning planning_of(store::PgSession& session, Plan now, std::string_view name) {
    pqxx::nontransaction tx{session.connection(now)};
    const auto row = tx.exec_params1(
        "SELECT generic_plans, custom_plans FROM pg_prepared_statements WHERE name = $1",
        std::string{name});
    return {row[0].as<long long>(), row[1].as<long long>()};
}

// Runs one of kStatements through the session, as the store runs its statements.
long long count(store::PgSession& session, const Statement& statement) {
    return session.autocommit(statement, [&](pqxx::nontransaction& tx) {
        return tx.exec_prepared1(std::string{statement.name}, "{1,2,3}")[0].as<long long>();
    });
}

// The plan PostgreSQL would run for `statement` on `tx`'s connection, as text.
std::string explain(pqxx::transaction_base& tx, const std::string& statement) {
    std::string plan;
    for (const auto& row : tx.exec("EXPLAIN " + statement)) plan += row[0].as<std::string>() + "\n";
    return plan;
}

std::string setting(store::PgSession& session, Plan now, const std::string& name) {
    pqxx::nontransaction tx{session.connection(now)};
    return tx.exec_params1("SELECT current_setting($1)", name)[0].as<std::string>();
}

// The session's plan_cache_mode and the scan and join methods it allows, in mode `now`.
void check_planning(store::PgSession& session, Plan now, const std::string& cache_mode,
                    const std::string& scans_and_joins) {
    CHECK(setting(session, now, "plan_cache_mode") == cache_mode);
    for (const auto* name :
         {"enable_seqscan", "enable_bitmapscan", "enable_hashjoin", "enable_mergejoin"}) {
        INFO(name);
        CHECK(setting(session, now, name) == scans_and_joins);
    }
}

}  // namespace

TEST_CASE(
    "a session plans generic statements once, of plain index scans, and the rest "
    "per execution",
    "[pg][store]") {
    test::TestDatabase db;
    store::PgSession session{db.url(), kStatements};

    count(session, kGeneric);
    count(session, kGeneric);
    check_planning(session, Plan::generic, "force_generic_plan", "off");
    count(session, kCustom);
    check_planning(session, Plan::custom, "force_custom_plan", "on");
    count(session, kCustom);
    count(session, kGeneric);

    const auto generic = planning_of(session, Plan::generic, kGeneric.name);
    CHECK(generic.generic_plans == 3);
    CHECK(generic.custom_plans == 0);
    const auto custom = planning_of(session, Plan::generic, kCustom.name);
    CHECK(custom.generic_plans == 0);
    CHECK(custom.custom_plans == 2);

    // The cached generic plan was made of plain index scans.
    pqxx::nontransaction tx{session.connection(Plan::generic)};
    const auto plan = explain(tx, "EXECUTE test_generic('{1}')");
    CHECK(plan.find("Seq Scan") == std::string::npos);
    CHECK(plan.find("Bitmap") == std::string::npos);
    CHECK(plan.find("Index Only Scan using outbox_pkey") != std::string::npos);
    tx.commit();

    // The control: the same statement, generic under the server's own settings, scans.
    auto plain = db.connect();
    pqxx::nontransaction control{plain};
    control.exec("PREPARE control(bigint[]) AS " + std::string{kCountSql});
    control.exec("SET plan_cache_mode = force_generic_plan");
    CHECK(explain(control, "EXECUTE control('{1}')").find("Seq Scan") != std::string::npos);
}

TEST_CASE("custom planning keeps the planner settings the database gives", "[pg][store]") {
    test::TestDatabase db;
    db.exec("ALTER DATABASE \"" + db.name() + "\" SET enable_hashjoin = off");
    store::PgSession session{db.url(), kStatements};
    count(session, kGeneric);
    count(session, kCustom);
    CHECK(setting(session, Plan::custom, "enable_hashjoin") == "off");
    CHECK(setting(session, Plan::custom, "enable_seqscan") == "on");
}

TEST_CASE("the hot statements' generic plans probe indexes, even planned on an empty table",
          "[pg][store]") {
    test::TestDatabase db;
    static constexpr std::array kHot{store::sql::kClaimScopedAfter, store::sql::kRecordOutcomes,
                                     store::sql::kRecordOutcomesLettingGo};
    store::PgSession session{db.url(), kHot};
    const std::string claim_args =
        "('node-a/boot-1', '{[0,1024)}', 'default', 'default', NULL, '{}', 10, true, 0, 0)";
    const std::string outcome_args =
        "('{1,2}', '{7,7}', '{done,done}', '{0,0}', '{\"\",\"\"}', '[]')";
    // Executed once each (libpqxx prepares on first use), then explained.
    session.autocommit(store::sql::kClaimScopedAfter, [&](pqxx::nontransaction& tx) {
        return tx
            .exec_prepared(std::string{store::sql::kClaimScopedAfter.name}, "node-a/boot-1",
                           "{[0,1024)}", "default", "default", std::optional<std::string>{}, "{}",
                           10, true, 0, 0)
            .size();
    });
    session.autocommit(store::sql::kRecordOutcomes, [&](pqxx::nontransaction& tx) {
        return tx
            .exec_prepared(std::string{store::sql::kRecordOutcomes.name}, "{1,2}", "{7,7}",
                           "{done,done}", "{0,0}", R"({"",""})", "[]")
            .size();
    });
    session.autocommit(store::sql::kRecordOutcomesLettingGo, [&](pqxx::nontransaction& tx) {
        return tx
            .exec_prepared(std::string{store::sql::kRecordOutcomesLettingGo.name}, "{1,2}", "{7,7}",
                           "{done,done}", "{0,0}", R"({"",""})", "[]", "{wf-1}")
            .size();
    });
    pqxx::nontransaction tx{session.connection(Plan::generic)};
    for (const auto& plan :
         {explain(tx, "EXECUTE outbox_claim_scoped_after" + claim_args),
          explain(tx, "EXECUTE outbox_record_outcomes" + outcome_args),
          explain(tx, "EXECUTE outbox_record_outcomes_letting_go" +
                          outcome_args.substr(0, outcome_args.size() - 1) + ", '{wf-1}')")}) {
        INFO(plan);
        CHECK(plan.find("Seq Scan") == std::string::npos);
        CHECK(plan.find("Bitmap") == std::string::npos);
        CHECK(plan.find("Hash") == std::string::npos);
        CHECK(plan.find("Index Scan using outbox_pkey") != std::string::npos);
    }
}
