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

namespace {

// The migrations before version `version`, then the rest.
std::span<const store::Migration> migrations_before(std::int64_t version) {
    const auto all = store::bundled_migrations();
    const auto at = std::find_if(all.begin(), all.end(),
                                 [version](const auto& m) { return m.version == version; });
    REQUIRE(at != all.end());
    return {all.begin(), at};
}

// The first column of each row of `sql`, as text ("NULL" for a NULL).
std::vector<std::string> first_column(const test::TestDatabase& db, const std::string& sql) {
    std::vector<std::string> out;
    for (const auto& r : db.exec(sql))
        out.push_back(r[0].is_null() ? "NULL" : r[0].as<std::string>());
    return out;
}

// One line per row, every column by name, in id order.
std::vector<std::string> outbox_rows(const test::TestDatabase& db) {
    return first_column(
        db,
        "SELECT concat_ws('|', id, dispatch_key, workflow_id, ordinal, run_id, namespace,"
        " task_queue, node, activity_type, input, status, attempt, visible_after,"
        " claimed_at, claimed_by, claim_token, last_error, created_at, finished_at, shard,"
        " priority, waiting, result, traceparent, holds_order, lease_token,"
        " lease_expires_at, heartbeat_at, progress) FROM outbox ORDER BY id");
}

// Everything defined on the table but its column order.
std::vector<std::string> outbox_definitions(const test::TestDatabase& db) {
    auto defs = first_column(
        db,
        "SELECT 'column ' || a.attname || ' ' || format_type(a.atttypid, a.atttypmod)"
        "       || ' ' || a.attnotnull || ' ' || "
        "coalesce(a.attcollation::regcollation::text, '')"
        "       || ' ' || a.attidentity::text || a.attgenerated::text || ' '"
        "       || coalesce(pg_get_expr(d.adbin, d.adrelid), '')"
        " FROM pg_attribute a LEFT JOIN pg_attrdef d"
        "   ON d.adrelid = a.attrelid AND d.adnum = a.attnum"
        " WHERE a.attrelid = 'outbox'::regclass AND a.attnum > 0 AND NOT a.attisdropped"
        " UNION ALL SELECT 'index ' || indexdef FROM pg_indexes WHERE tablename = 'outbox'"
        " UNION ALL SELECT 'constraint ' || conname || ' ' || pg_get_constraintdef(oid)"
        "   FROM pg_constraint WHERE conrelid = 'outbox'::regclass"
        " UNION ALL SELECT 'trigger ' || pg_get_triggerdef(oid)"
        "   FROM pg_trigger WHERE tgrelid = 'outbox'::regclass AND NOT tgisinternal"
        " UNION ALL SELECT 'table ' || coalesce(relacl::text, '') || ' '"
        "   || coalesce(reloptions::text, '') || ' ' || relowner::regrole::text || ' '"
        "   || coalesce(obj_description(oid, 'pg_class'), '')"
        "   FROM pg_class WHERE oid = 'outbox'::regclass"
        " UNION ALL SELECT 'comment ' || a.attname || ' ' || col_description(a.attrelid, "
        "a.attnum)"
        "   FROM pg_attribute a WHERE a.attrelid = 'outbox'::regclass AND a.attnum > 0"
        "     AND col_description(a.attrelid, a.attnum) IS NOT NULL"
        " UNION ALL SELECT 'sequence ' || last_value FROM outbox_id_seq"
        " ORDER BY 1");
    std::sort(defs.begin(), defs.end());  // byte order, whatever the database collation
    return defs;
}

std::int64_t attnum_of(const test::TestDatabase& db, const std::string& column) {
    return db
        .exec(
            "SELECT attnum FROM pg_attribute WHERE attrelid = 'outbox'::regclass"
            " AND attname = '" +
            column + "'")[0][0]
        .as<std::int64_t>();
}

}  // namespace

TEST_CASE("the rebuild that puts indexed columns first keeps every row, definition and grant",
          "[pg][store][migrate]") {
    const std::string role = "t_rebuild_" + std::to_string(::getpid());
    {
        test::TestDatabase db{/*migrated=*/false};
        store::migrate(db.url(), migrations_before(17));
        db.exec("CREATE ROLE " + role);
        // Rows in every state, with every optional column set somewhere.
        db.exec(
            "INSERT INTO outbox (workflow_id, ordinal, activity_type, input, priority, node,"
            " run_id, traceparent)"
            " SELECT 'wf' || g % 50, g, 'a' || g % 3, jsonb_build_object('g', g), g % 4,"
            "  CASE WHEN g % 6 = 0 THEN 'n' END, CASE WHEN g % 4 = 0 THEN 'r' || g END,"
            "  CASE WHEN g % 5 = 0"
            "       THEN '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' END"
            " FROM generate_series(1, 2000) g");
        db.exec(
            "UPDATE outbox SET status = 'claimed', claimed_at = now(), claimed_by = 'n1',"
            " claim_token = id, holds_order = true, lease_token = id,"
            " lease_expires_at = now(), heartbeat_at = now(), progress = '{\"p\": 1}'"
            " WHERE id % 7 = 0");
        db.exec(
            "UPDATE outbox SET status = 'done', finished_at = now(), result = '{\"ok\": 1}'"
            " WHERE id % 11 = 0 AND status = 'pending'");
        db.exec(
            "UPDATE outbox SET status = 'failed', finished_at = now(), last_error = 'boom',"
            " attempt = 3 WHERE id % 13 = 0 AND status = 'pending'");
        db.exec("UPDATE outbox SET waiting = true WHERE id % 17 = 0 AND status = 'pending'");
        db.exec("DELETE FROM outbox WHERE id > 1990");  // the sequence stands past the last id
        // What an operator may have added by hand.
        db.exec("GRANT INSERT, SELECT ON outbox TO " + role + " WITH GRANT OPTION");
        db.exec("GRANT SELECT ON outbox TO PUBLIC");
        db.exec("CREATE INDEX by_hand_idx ON outbox (created_at) WHERE status = 'done'");
        db.exec("ALTER TABLE outbox ADD CONSTRAINT by_hand_check CHECK (attempt < 1000) NOT VALID");
        db.exec("COMMENT ON TABLE outbox IS 'the outbox'");
        db.exec("COMMENT ON COLUMN outbox.input IS 'payload'");
        db.exec("ALTER TABLE outbox SET (fillfactor = 90)");
        db.exec("ALTER TABLE outbox ALTER COLUMN namespace SET DEFAULT 'billing'");
        const auto rows = outbox_rows(db);
        const auto defs = outbox_definitions(db);
        REQUIRE(rows.size() == 1990);
        REQUIRE(attnum_of(db, "priority") > 20);

        // 0017 itself (later migrations add columns of their own).
        store::migrate(db.url(), migrations_before(18));
        CHECK(attnum_of(db, "id") == 1);
        for (const auto* column : {"priority", "waiting", "holds_order", "visible_after"})
            CHECK(attnum_of(db, column) <= 6);
        CHECK(outbox_rows(db) == rows);
        // Two checks move into the columns' types, as domains; nothing else changes.
        std::vector<std::string> expected;
        for (auto line : defs) {
            if (line.starts_with("constraint outbox_priority_range ") ||
                line.starts_with("constraint outbox_traceparent_format ")) {
                continue;
            }
            const auto swap = [&line](const std::string& from, const std::string& to) {
                if (const auto at = line.find(from); at != std::string::npos)
                    line.replace(at, from.size(), to);
            };
            swap("column priority smallint ", "column priority outbox_priority ");
            swap("column traceparent text ", "column traceparent outbox_traceparent ");
            swap("(priority > 0)", "((priority)::smallint > 0)");
            expected.push_back(line);
        }
        std::sort(expected.begin(), expected.end());
        CHECK(outbox_definitions(db) == expected);
        CHECK(
            db.exec("SELECT count(*) FROM pg_constraint WHERE conrelid = 'outbox'::regclass"
                    " AND conname IN ('outbox_priority_range', 'outbox_traceparent_format')")[0][0]
                .as<int>() == 0);
        // Ids go on past the last one ever drawn; defaults and generated columns still apply.
        const auto fresh = db.exec(
            "INSERT INTO outbox (workflow_id, ordinal, activity_type) VALUES ('wf-new', 0, 'a')"
            " RETURNING id, namespace, status, priority, waiting, shard = outbox_shard('wf-new'),"
            " dispatch_key")[0];
        CHECK(fresh[0].as<std::int64_t>() == 2001);
        CHECK(fresh[1].as<std::string>() == "billing");
        CHECK(fresh[2].as<std::string>() == "pending");
        CHECK(fresh[3].as<int>() == 0);
        CHECK_FALSE(fresh[4].as<bool>());
        CHECK(fresh[5].as<bool>());
        CHECK(fresh[6].as<std::string>() == "wf-new:0");
        CHECK(db.exec("SELECT has_table_privilege('" + role +
                      "', 'outbox', 'INSERT WITH GRANT "
                      "OPTION')")[0][0]
                  .as<bool>());
    }
    pqxx::connection admin{test::TestDatabase::admin_url()};
    pqxx::nontransaction{admin}.exec("DROP ROLE " + role);
}

TEST_CASE("the rebuild of the outbox refuses, changing nothing, what it cannot carry over",
          "[pg][store][migrate][hostile]") {
    test::TestDatabase db{/*migrated=*/false};
    store::migrate(db.url(), migrations_before(17));
    db.exec("INSERT INTO outbox (workflow_id, ordinal, activity_type) VALUES ('wf', 0, 'a')");
    db.exec("CREATE VIEW outbox_by_hand AS SELECT id, status FROM outbox");
    db.exec("ALTER TABLE outbox ADD COLUMN added_by_hand text");
    CHECK_THROWS_WITH(store::migrate(db.url()), Catch::Contains("cannot carry over") &&
                                                    Catch::Contains("outbox_by_hand") &&
                                                    Catch::Contains("added_by_hand"));
    CHECK(attnum_of(db, "priority") > 20);
    CHECK(db.exec("SELECT count(*) FROM outbox")[0][0].as<int>() == 1);
    CHECK(db.exec("SELECT count(*) FROM schema_migrations WHERE version = 17")[0][0].as<int>() ==
          0);
    // Without them, it goes through.
    db.exec("DROP VIEW outbox_by_hand");
    db.exec("ALTER TABLE outbox DROP COLUMN added_by_hand");
    store::migrate(db.url());
    CHECK(attnum_of(db, "priority") <= 6);
    CHECK(db.exec("SELECT count(*) FROM outbox")[0][0].as<int>() == 1);
}
