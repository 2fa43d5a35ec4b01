// Schedules in PostgreSQL: each firing staged once, by the owner of the schedule's shard,
// with its key; catch-up after time nobody owned it; a row plain SQL broke rests.

#include <catch2/catch.hpp>

#include "outboxd/store/schedule_store.hpp"
#include "outboxd/store/store_error.hpp"
#include "store_fixture.hpp"

using namespace outboxd;
using namespace std::chrono_literals;

namespace {

store::ScheduleSpec every_minute(const std::string& id, const std::string& catch_up = "one") {
    store::ScheduleSpec spec;
    spec.id = id;
    spec.cron = "* * * * *";
    spec.activity_type = "report";
    spec.input_json = R"({"kind": "daily"})";
    spec.catch_up = catch_up;
    return spec;
}

}  // namespace

TEST_CASE("a schedule stages each due firing once, keyed by its fire time", "[pg][schedule]") {
    test::StoreFixture f;
    store::ScheduleStore schedules{f.store.session};
    schedules.put(every_minute("min"));
    auto record = schedules.get("min");
    REQUIRE(record);
    REQUIRE(record->next_fire_at);
    CHECK(f.db.exec("SELECT next_fire_at > now() AND next_fire_at <= now() + interval '60 s'"
                    " FROM schedules")[0][0]
              .as<bool>());
    // Not due: nothing.
    CHECK(schedules.fire_due(f.owner, 10).staged == 0);

    // Due now: one row, its key the fire time; fired again, nothing more. (The minute is
    // read once, so that a test crossing a minute boundary compares one minute.)
    const auto minute =
        f.db.exec("SELECT date_trunc('minute', now())::text")[0][0].as<std::string>();
    f.db.exec("UPDATE schedules SET next_fire_at = '" + minute + "'");
    const auto fired = schedules.fire_due(f.owner, 10);
    CHECK(fired.staged == 1);
    const auto key = f.db.exec("SELECT 'schedule:min:' || to_char('" + minute +
                               "'::timestamptz AT TIME ZONE 'UTC',"
                               " 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"')")[0][0]
                         .as<std::string>();
    (void)schedules.fire_due(f.owner, 10);  // the next minute, if one began meanwhile
    CHECK(f.count("dispatch_key = '" + key + "'") == 1);
    const auto row = f.store.find(key);
    REQUIRE(row);
    CHECK(row->activity_type == "report");
    CHECK(row->workflow_id == key);
    CHECK(row->input_json == R"({"kind": "daily"})");
    CHECK(schedules.get("min")->last_fired_at);

    // A second staging of the same firing (a node that lost the update) is a no-op.
    f.db.exec("UPDATE schedules SET next_fire_at = '" + minute + "'");
    CHECK(schedules.fire_due(f.owner, 10).staged >= 1);  // asked for, not inserted
    CHECK(f.count("dispatch_key = '" + key + "'") == 1);

    // Only the owner of the schedule's shard fires it.
    f.db.exec("UPDATE schedules SET next_fire_at = now() - interval '1 s'");
    CHECK(schedules.fire_due({"node-z/boot", store::ShardRanges::all()}, 10).schedules == 0);

    // Re-PUT with the same timing keeps the next firing; a new cron starts from now.
    const auto kept = f.db.exec("SELECT next_fire_at FROM schedules")[0][0].as<std::string>();
    schedules.put(every_minute("min"));
    CHECK(f.db.exec("SELECT next_fire_at FROM schedules")[0][0].as<std::string>() == kept);
    auto hourly = every_minute("min");
    hourly.cron = "0 * * * *";
    schedules.put(hourly);
    CHECK(f.db.exec("SELECT next_fire_at > now() FROM schedules")[0][0].as<bool>());
    CHECK(schedules.remove("min"));
    CHECK_FALSE(schedules.remove("min"));
}

TEST_CASE("firings missed while nobody owned a schedule follow catch_up", "[pg][schedule]") {
    test::StoreFixture f;
    store::ScheduleStore schedules{f.store.session};
    schedules.put(every_minute("none", "none"));
    schedules.put(every_minute("one", "one"));
    schedules.put(every_minute("all", "all"));
    // Ten minutes unowned.
    f.db.exec(
        "UPDATE schedules SET next_fire_at = date_trunc('minute', now()) - interval '10 min'");
    // The current minute counts as on time only within its first 30 s, by the clock of the
    // firing: read before and after it, and judged only when both agree.
    const auto on_time_now = [&f] {
        return f.db.exec("SELECT now() - date_trunc('minute', now()) <= interval '30 s'")[0][0]
            .as<bool>();
    };
    const bool on_time = on_time_now();
    const auto fired = schedules.fire_due(f.owner, 10);
    const bool judged = on_time_now() == on_time;
    CHECK(fired.schedules == 3);
    const auto staged = [&](const std::string& id) {
        return f.count("dispatch_key LIKE 'schedule:" + id + ":%'");
    };
    if (judged) {
        CHECK(staged("none") == (on_time ? 1 : 0));
        CHECK(staged("one") == (on_time ? 2 : 1));
    }
    CHECK(staged("all") == 11);
    CHECK(schedules.fire_due(f.owner, 10).staged == 0);
}

TEST_CASE("a schedule row broken by plain SQL rests with its error", "[pg][schedule]") {
    test::StoreFixture f;
    store::ScheduleStore schedules{f.store.session};
    CHECK_THROWS_AS(
        [&] {
            auto bad = every_minute("bad");
            bad.cron = "61 * * * *";
            schedules.put(bad);
        }(),
        store::ValidationError);
    schedules.put(every_minute("broken"));
    f.db.exec("UPDATE schedules SET cron = 'not a cron', next_fire_at = now() - interval '1 s'");
    const auto fired = schedules.fire_due(f.owner, 10);
    CHECK(fired.refused == std::vector<std::string>{"broken"});
    const auto record = schedules.get("broken");
    REQUIRE(record);
    CHECK(record->next_fire_at);  // kept: a node that can read it may still fire it
    REQUIRE(record->last_error);
    CHECK_THAT(*record->last_error, Catch::Contains("cron"));
    CHECK(schedules.fire_due(f.owner, 10).schedules == 0);  // rests a minute
    f.db.exec("UPDATE schedules SET updated_at = now() - interval '2 min'");
    CHECK(schedules.fire_due(f.owner, 10).refused.size() == 1);
}
