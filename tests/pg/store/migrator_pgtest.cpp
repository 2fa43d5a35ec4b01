#include <algorithm>
#include <span>
#include <thread>

#include <catch2/catch.hpp>

#include "outboxd/store/migrator.hpp"
#include "outboxd/store/store_error.hpp"
#include "test_database.hpp"

using namespace outboxd;

TEST_CASE("migrations apply once and are recorded", "[pg][store][migrate]") {
    test::TestDatabase db;  // already migrated once
    const auto again = store::migrate(db.url());
    CHECK(again.applied.empty());
    CHECK(again.current_version == store::bundled_migrations().back().version);
    const auto recorded = db.exec("SELECT count(*) FROM schema_migrations")[0][0].as<int>();
    CHECK(recorded == static_cast<int>(store::bundled_migrations().size()));
    CHECK(store::migrations_current(db.url()));
}

TEST_CASE("nodes migrating together apply each migration once", "[pg][store][migrate]") {
    pqxx::connection admin{test::TestDatabase::admin_url()};
    const std::string name = "t_race_" + std::to_string(::getpid());
    pqxx::nontransaction{admin}.exec("DROP DATABASE IF EXISTS " + name);
    pqxx::nontransaction{admin}.exec("CREATE DATABASE " + name);
    const auto url = test::TestDatabase::url_for(name);
    CHECK_FALSE(store::migrations_current(url));

    std::vector<store::MigrationReport> reports(6);
    std::vector<std::thread> threads;
    for (auto& report : reports) {
        threads.emplace_back([&report, &url] { report = store::migrate(url); });
    }
    for (auto& t : threads) t.join();
    std::size_t applied = 0;
    for (const auto& report : reports) applied += report.applied.size();
    CHECK(applied == store::bundled_migrations().size());
    CHECK(store::migrations_current(url));
    pqxx::nontransaction{admin}.exec("DROP DATABASE " + name + " WITH (FORCE)");
}

TEST_CASE("a failed migration leaves nothing half-applied", "[pg][store][migrate]") {
    test::TestDatabase db;
    const store::Migration broken[] = {
        {9001, "half", "CREATE TABLE half_applied (x int); SELECT no_such_function();"}};
    CHECK_THROWS_AS(store::migrate(db.url(), broken), store::MigrationError);
    CHECK(db.exec("SELECT to_regclass('half_applied') IS NULL")[0][0].as<bool>());
    CHECK(db.exec("SELECT count(*) FROM schema_migrations WHERE version = 9001")[0][0].as<int>() ==
          0);
}

TEST_CASE("an applied migration whose file changed is refused", "[pg][store][migrate]") {
    test::TestDatabase db;
    auto edited = std::vector<store::Migration>(store::bundled_migrations().begin(),
                                                store::bundled_migrations().end());
    edited.front().sql = "SELECT 1";
    CHECK_THROWS_WITH(store::migrate(db.url(), edited), Catch::Contains("different contents"));
    CHECK_FALSE(store::migrations_current(db.url(), edited));
}

TEST_CASE("an unreachable database is reported as unavailable", "[pg][store][migrate]") {
    CHECK_THROWS_AS(store::migrate("postgresql://postgres@127.0.0.1:1/none?connect_timeout=2"),
                    store::UnavailableError);
}

TEST_CASE("instants that are not finite are made due by the migration and refused after it",
          "[pg][store][migrate][hostile]") {
    test::TestDatabase db{/*migrated=*/false};
    const auto all = store::bundled_migrations();
    // The schema before 0005 let a plain SQL insert stage '-infinity', which failed every
    // claim of its node.
    const auto before =
        std::find_if(all.begin(), all.end(), [](const auto& m) { return m.version == 5; });
    REQUIRE(before != all.end());
    store::migrate(db.url(), std::span{all.begin(), before});
    db.exec(
        "INSERT INTO outbox (workflow_id, ordinal, activity_type, visible_after) "
        "VALUES ('inf', 0, 'a', '-infinity'), ('inf', 1, 'a', 'infinity')");
    store::migrate(db.url());
    CHECK(db.exec("SELECT count(*) FROM outbox WHERE isfinite(visible_after) AND visible_after <= "
                  "now()")[0][0]
              .as<int>() == 2);
    CHECK_THROWS_WITH(
        db.exec("INSERT INTO outbox (workflow_id, ordinal, activity_type, visible_after) "
                "VALUES ('inf', 2, 'a', '-infinity')"),
        Catch::Contains("outbox_visible_after_finite"));
    CHECK_THROWS_WITH(
        db.exec("INSERT INTO outbox (workflow_id, ordinal, activity_type, created_at) "
                "VALUES ('inf', 3, 'a', 'infinity')"),
        Catch::Contains("outbox_created_at_finite"));
}
