// Staging: idempotent batches, contract defaults, validation, plain-SQL writers.

#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "outboxd/store/store_error.hpp"
#include "store_fixture.hpp"

using namespace outboxd;
using store::Status;
using test::new_row;

TEST_CASE("append stages a batch and reads every field back", "[pg][store]") {
    test::StoreFixture f;
    auto row = new_row("wf-1", 3, "tenant", "gpu", "box-7");
    row.run_id = "run-9";
    const auto result = f.store.append(std::vector{row, new_row("wf-1", 4)});
    CHECK(result.staged == 2);
    CHECK(result.duplicates == 0);

    const auto read = f.store.find("wf-1:3");
    REQUIRE(read);
    CHECK(read->dispatch_key == "wf-1:3");
    CHECK(read->workflow_id == "wf-1");
    CHECK(read->ordinal == 3);
    CHECK(read->run_id == "run-9");
    CHECK(read->namespace_name == "tenant");
    CHECK(read->task_queue == "gpu");
    CHECK(read->node == "box-7");
    CHECK(read->activity_type == "charge");
    CHECK(read->input_json == R"({"amount": 42})");  // jsonb's canonical text
    CHECK(read->status == Status::pending);
    CHECK(read->attempt == 0);
    CHECK_FALSE(read->claimed_at);
    CHECK_FALSE(read->claimed_by);
    CHECK(read->claim_token == 0);
    CHECK(read->shard >= 0);
    CHECK(read->shard < store::kShardCount);
    const auto expected_shard = f.db.exec("SELECT outbox_shard('wf-1')")[0][0].as<std::int32_t>();
    CHECK(read->shard == expected_shard);
    CHECK_FALSE(f.store.find("wf-1:99"));
}

TEST_CASE("re-appending a staged batch stages nothing", "[pg][store]") {
    test::StoreFixture f;
    const std::vector rows{new_row("wf", 0), new_row("wf", 1), new_row("wf", 2)};
    CHECK(f.store.append(rows).staged == 3);
    const auto again = f.store.append(rows);
    CHECK(again.staged == 0);
    CHECK(again.duplicates == 3);
    CHECK(f.count("true") == 3);

    // A duplicate inside one batch is staged once.
    const auto mixed = f.store.append(std::vector{new_row("wf", 3), new_row("wf", 3)});
    CHECK(mixed.staged == 1);
    CHECK(mixed.duplicates == 1);
    // A re-issued batch never resurrects a finished row.
    const auto claimed = f.store.claim(f.owner, 10);
    for (const auto& row : claimed) CHECK(f.store.complete({row.id, row.claim_token}));
    CHECK(f.store.append(rows).staged == 0);
    CHECK(f.count("status = 'done'") == 4);
}

TEST_CASE("an explicit dispatch key and visible_after are honoured", "[pg][store]") {
    test::StoreFixture f;
    auto row = new_row("wf", 0);
    row.dispatch_key = "order-123/charge";
    row.visible_after = store::now() + std::chrono::hours{1};
    f.store.append(std::vector{row});
    const auto read = f.store.find("order-123/charge");
    REQUIRE(read);
    CHECK(read->visible_after > store::now() + std::chrono::minutes{59});
    CHECK(f.store.claim(f.owner, 10).empty());  // not yet due
}

TEST_CASE("rows inserted by plain SQL in an application transaction get key and shard",
          "[pg][store]") {
    test::StoreFixture f;
    {
        auto conn = f.db.connect();
        pqxx::work app{conn};
        app.exec("CREATE TABLE orders (id int PRIMARY KEY)");
        app.exec("INSERT INTO orders VALUES (1)");
        app.exec(
            "INSERT INTO outbox (workflow_id, ordinal, activity_type, input) "
            "VALUES ('order-1', 0, 'charge', '{\"id\":1}'), ('order-1', 1, 'email', DEFAULT)");
        app.commit();
    }
    const auto first = f.store.find("order-1:0");
    REQUIRE(first);
    CHECK(first->namespace_name == "default");
    CHECK(first->task_queue == "default");
    CHECK_FALSE(first->node);
    CHECK(first->status == Status::pending);
    CHECK(first->shard == f.db.exec("SELECT outbox_shard('order-1')")[0][0].as<int>());
    const auto second = f.store.find("order-1:1");
    REQUIRE(second);
    CHECK(second->input_json == "null");

    // The writer never supplies the shard.
    CHECK_THROWS(
        f.db.exec("INSERT INTO outbox (workflow_id, ordinal, activity_type, shard) "
                  "VALUES ('x', 0, 'charge', 5)"));
    // A rolled-back application transaction stages nothing.
    {
        auto conn = f.db.connect();
        pqxx::work app{conn};
        app.exec(
            "INSERT INTO outbox (workflow_id, ordinal, activity_type) VALUES ('gone', 0, 'a')");
        app.abort();
    }
    CHECK_FALSE(f.store.find("gone:0"));
    // ON CONFLICT DO NOTHING makes a re-issued application insert harmless.
    f.db.exec(
        "INSERT INTO outbox (workflow_id, ordinal, activity_type) VALUES ('order-1', 0, "
        "'charge') ON CONFLICT (dispatch_key) DO NOTHING");
    CHECK(f.count("workflow_id = 'order-1'") == 2);
}

TEST_CASE("the shard function is stable, in range and spreads workflows", "[pg][store]") {
    test::StoreFixture f;
    const auto r = f.db.exec(
        "SELECT min(s), max(s), count(DISTINCT s) FROM "
        "(SELECT outbox_shard('wf-' || g) AS s FROM generate_series(1, 20000) g) x");
    CHECK(r[0][0].as<int>() >= 0);
    CHECK(r[0][1].as<int>() <= 1023);
    CHECK(r[0][2].as<int>() > 1000);  // nearly every shard is hit
    CHECK(f.db.exec("SELECT outbox_shard('a') = outbox_shard('a')")[0][0].as<bool>());
}

TEST_CASE("malformed rows are refused with the row index and change nothing", "[pg][store]") {
    test::StoreFixture f;
    const auto refused = [&](store::NewRow bad, const std::string& message) {
        const std::vector batch{new_row("ok", 0), std::move(bad), new_row("ok", 2)};
        try {
            f.store.append(batch);
            FAIL("append accepted " << message);
        } catch (const store::ValidationError& error) {
            CHECK(error.row_index() == std::size_t{1});
            CHECK_THAT(error.what(), Catch::Contains(message));
        }
    };
    auto negative = new_row("wf", -1);
    refused(negative, "ordinal");
    auto no_type = new_row("wf", 1);
    no_type.activity_type = "";
    refused(no_type, "activity_type");
    auto bad_json = new_row("wf", 1);
    bad_json.input_json = "{not json";
    refused(bad_json, "input");
    auto two_values = new_row("wf", 1);
    two_values.input_json = "1 2";
    refused(two_values, "input");
    auto nul_json = new_row("wf", 1);
    nul_json.input_json = R"({"a":"\u0000"})";
    refused(nul_json, "\\u0000");
    auto no_workflow = new_row("", 1);
    refused(no_workflow, "workflow_id");
    auto empty_node = new_row("wf", 1);
    empty_node.node = "";
    refused(empty_node, "node");
    auto nul_byte = new_row(std::string{"w\0f", 3}, 1);
    refused(nul_byte, "NUL");
    auto huge = new_row(std::string(5000, 'w'), 1);
    refused(huge, "longer than");
    CHECK(f.count("true") == 0);
}

TEST_CASE("the schema refuses malformed rows written by plain SQL", "[pg][store]") {
    test::StoreFixture f;
    CHECK_THROWS(f.db.exec(
        "INSERT INTO outbox (workflow_id, ordinal, activity_type) VALUES ('wf', -1, 'a')"));
    CHECK_THROWS(
        f.db.exec("INSERT INTO outbox (workflow_id, ordinal, activity_type) VALUES ('wf', 0, '')"));
    CHECK_THROWS(
        f.db.exec("INSERT INTO outbox (workflow_id, ordinal, activity_type, input) "
                  "VALUES ('wf', 0, 'a', '{bad')"));
    CHECK_THROWS(
        f.db.exec("INSERT INTO outbox (workflow_id, ordinal, activity_type, status) "
                  "VALUES ('wf', 0, 'a', 'bogus')"));
    CHECK_THROWS(
        f.db.exec("INSERT INTO outbox (workflow_id, ordinal, activity_type, status) "
                  "VALUES ('wf', 0, 'a', 'claimed')"));  // no claim fields
    CHECK_THROWS(f.db.exec(
        "INSERT INTO outbox (workflow_id, ordinal, activity_type) VALUES (NULL, 0, 'a')"));
    for (const char* trace : {"'00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01'",
                              "'ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01'",
                              "'00-00000000000000000000000000000000-00f067aa0ba902b7-01'",
                              "'00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01'",
                              "'00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7'", "'x'"}) {
        INFO(trace);
        CHECK_THROWS(f.db.exec(
            std::string{"INSERT INTO outbox (workflow_id, ordinal, activity_type, traceparent) "
                        "VALUES ('wf', 0, 'a', "} +
            trace + ")"));
    }
    CHECK(f.count("true") == 0);
    // The bounds hold for plain SQL updates too, named as the checks they replace (0017).
    CHECK_THROWS_WITH(
        f.db.exec("INSERT INTO outbox (workflow_id, ordinal, activity_type, priority) "
                  "VALUES ('wf', 0, 'a', 101)"),
        Catch::Contains("outbox_priority_range"));
    f.db.exec("INSERT INTO outbox (workflow_id, ordinal, activity_type) VALUES ('wf', 0, 'a')");
    CHECK_THROWS_WITH(f.db.exec("UPDATE outbox SET priority = -1"),
                      Catch::Contains("outbox_priority_range"));
    CHECK_THROWS_WITH(f.db.exec("UPDATE outbox SET traceparent = 'x'"),
                      Catch::Contains("outbox_traceparent_format"));
    // Hostile values by plain SQL: a priority past smallint, a 1 MB traceparent.
    CHECK_THROWS(f.db.exec("UPDATE outbox SET priority = 40000"));
    CHECK_THROWS_WITH(f.db.exec("UPDATE outbox SET traceparent = '00-' || repeat('a', 1048576)"),
                      Catch::Contains("outbox_traceparent_format"));
    CHECK(f.count("priority = 0 AND traceparent IS NULL") == 1);
}

TEST_CASE("a traceparent staged by the API or by plain SQL reads back and travels with a claim",
          "[pg][store]") {
    test::StoreFixture f;
    const std::string trace = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    auto row = new_row("api", 0);
    row.traceparent = trace;
    f.store.append(std::vector{row});
    f.db.exec(
        "INSERT INTO outbox (workflow_id, ordinal, activity_type, traceparent) VALUES "
        "('sql', 0, 'a', '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00')");
    CHECK(f.store.find("api:0")->traceparent == trace);
    CHECK(f.store.find("sql:0")->traceparent ==
          "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00");
    for (const auto& claimed : f.store.claim(f.owner, 10)) {
        CHECK(claimed.traceparent == f.store.find(claimed.dispatch_key)->traceparent);
    }
    // The API refuses what the table would, naming the row and the field.
    auto bad = new_row("bad", 0);
    bad.traceparent = "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01";
    try {
        f.store.append(std::vector{bad});
        FAIL("a bad traceparent was staged");
    } catch (const store::ValidationError& error) {
        CHECK(std::string{error.what()}.find("traceparent") != std::string::npos);
    }
}

TEST_CASE("an unknown status token read back is a decode error", "[pg][store]") {
    test::StoreFixture f;
    f.store.append(std::vector{new_row("wf", 0)});
    // Only a schema edited behind our back can hold such a row.
    f.db.exec("ALTER TABLE outbox DROP CONSTRAINT outbox_status_known");
    f.db.exec("UPDATE outbox SET status = 'paused' WHERE dispatch_key = 'wf:0'");
    CHECK_THROWS_AS(f.store.find("wf:0"), store::DecodeError);
    CHECK_THROWS_WITH(f.store.find("wf:0"), Catch::Contains("'paused'"));
}

namespace {

// Counts wakes on its own connection.
struct WakeCounter final : pqxx::notification_receiver {
    explicit WakeCounter(pqxx::connection& listener)
        : pqxx::notification_receiver(listener, "outbox_wake") {}
    int count = 0;
    std::vector<std::string> payloads;
    void operator()(const std::string& payload, int) override {
        ++count;
        payloads.push_back(payload);
    }

    // Waits up to `seconds` for the first wake, then takes whatever else has arrived.
    int await(pqxx::connection& listener, long seconds) {
        listener.await_notification(seconds, 0);
        listener.get_notifs();
        return count;
    }
    // Waits up to `seconds` until `wanted` wakes have arrived (they may come in separate
    // reads), then a moment more for any beyond them.
    int await_count(pqxx::connection& listener, int wanted, int seconds) {
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds{seconds};
        while (count < wanted && std::chrono::steady_clock::now() < deadline) {
            listener.await_notification(0, 100'000);
        }
        listener.await_notification(0, 100'000);
        listener.get_notifs();
        return count;
    }
};

const std::string kStageSql =
    "INSERT INTO outbox (dispatch_key, workflow_id, ordinal, activity_type) VALUES ($1, $1, 0, "
    "'noop')";

}  // namespace

TEST_CASE("a transaction wakes listeners once, at commit, however many rows it stages",
          "[pg][store]") {
    test::StoreFixture f;
    auto listener = f.db.connect();
    WakeCounter wakes{listener};
    f.store.append(std::vector{new_row("wf", 0), new_row("wf", 1), new_row("wf", 2)});
    CHECK(wakes.await(listener, 5) == 1);

    auto app = f.db.connect();
    pqxx::work tx{app};
    tx.exec_params(kStageSql, "one");
    tx.exec_params(kStageSql, "two");
    CHECK(wakes.await(listener, 1) == 1);  // nothing before the commit
    tx.commit();
    CHECK(wakes.await(listener, 5) == 2);
}

TEST_CASE("the wake names each route a transaction stages into, and bad rows fail as rows",
          "[pg][store]") {
    test::StoreFixture f;
    auto listener = f.db.connect();
    WakeCounter wakes{listener};
    // 1,000 rows over two routes, alternating: one notification per route.
    f.db.exec(
        "INSERT INTO outbox (workflow_id, ordinal, activity_type, namespace) "
        "SELECT 'bulk-' || g, 0, 'noop', CASE WHEN g % 2 = 0 THEN 'even' ELSE 'odd' END "
        "FROM generate_series(1, 1000) g");
    REQUIRE(wakes.await_count(listener, 2, 5) == 2);
    auto payloads = wakes.payloads;
    std::sort(payloads.begin(), payloads.end());
    CHECK(payloads == std::vector<std::string>{R"({"routes":[["even","default"]]})",
                                               R"({"routes":[["odd","default"]]})"});

    // A route whose names cannot travel in a notification wakes with an empty payload (look
    // everywhere); names JSON must escape arrive escaped.
    f.db.exec(
        "INSERT INTO outbox (workflow_id, ordinal, activity_type, namespace) VALUES "
        "('long', 0, 'noop', repeat('n', 9000))");
    f.db.exec(
        "INSERT INTO outbox (workflow_id, ordinal, activity_type, task_queue) VALUES "
        "('quote', 0, 'noop', 'q\"\\')");
    REQUIRE(wakes.await_count(listener, 4, 5) == 4);
    CHECK(wakes.payloads[2].empty());
    CHECK(wakes.payloads[3] == R"({"routes":[["default","q\"\\"]]})");

    // A NULL route is the row's own error (NOT NULL), not the trigger's, and wakes nobody.
    try {
        f.db.exec(
            "INSERT INTO outbox (workflow_id, ordinal, activity_type, namespace) VALUES "
            "('null-ns', 0, 'noop', NULL)");
        FAIL("a NULL namespace was accepted");
    } catch (const pqxx::not_null_violation&) {
    }
    CHECK(wakes.await_count(listener, 5, 1) == 4);
}

TEST_CASE("a resume wakes listeners to claim from the front, a requeue with a plain wake",
          "[pg][store]") {
    test::StoreFixture f;
    f.store.append(std::vector{new_row("wf", 0)});
    f.store.pause_workflow("wf");
    f.db.exec(
        "UPDATE outbox SET status = 'failed', attempt = 3, finished_at = now(),"
        " last_error = 'boom' WHERE dispatch_key = 'wf:0'");
    auto listener = f.db.connect();
    WakeCounter wakes{listener};

    REQUIRE(f.store.resume_workflow("wf"));
    CHECK(wakes.await(listener, 5) == 1);
    CHECK_FALSE(f.store.resume_workflow("wf"));  // nothing resumed: no wake
    REQUIRE(f.store.requeue_dead_letter("wf:0"));
    CHECK(wakes.await(listener, 5) == 2);
    CHECK_FALSE(f.store.requeue_dead_letter("wf:0"));
    CHECK(wakes.await(listener, 1) == 2);
    CHECK(wakes.payloads == std::vector<std::string>{"front", ""});
}

namespace {

std::int64_t pg_micros(store::TimePoint instant) { return instant.time_since_epoch().count(); }

}  // namespace

TEST_CASE("instants far from now are kept and read back exactly", "[pg][store]") {
    test::StoreFixture f;
    // 9999 and the year 1000: both outside what a nanosecond clock holds (1677..2262).
    auto far = new_row("far", 0);
    far.visible_after =
        store::TimePoint{std::chrono::microseconds{253402300799999999}};  // 9999-12-31
    f.store.append(std::vector{far});
    CHECK(f.store.find("far:0")->visible_after == *far.visible_after);
    f.db.exec(
        "INSERT INTO outbox (workflow_id, ordinal, activity_type, visible_after) "
        "VALUES ('ancient', 0, 'charge', '1000-01-01T00:00:00Z')");
    const auto claimed = f.store.claim(f.owner, 10);
    REQUIRE(claimed.size() == 1);  // due long ago; the other one not yet
    CHECK(claimed[0].dispatch_key == "ancient:0");
    CHECK(pg_micros(claimed[0].visible_after) == -30610224000000000);  // 1000-01-01, exactly
}
