// Schedules through real nodes (README, "Schedules"): the API with next fire times and
// validation, and a schedule firing every minute staged exactly once per firing across a
// kill -9 of the node that owns it.

#include <csignal>
#include <thread>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "e2e_cluster.hpp"

using namespace outboxd;
using namespace std::chrono_literals;
using nlohmann::json;
using test::E2eCluster;
using test::http_call;

TEST_CASE("schedules are set, shown with their next fire times, validated and deleted",
          "[e2e][schedule]") {
    E2eCluster cluster{"schedule-api"};
    auto& node = cluster.start_node("node-1");
    const auto put = http_call(node.port, "PUT", "/v1/schedules/nightly",
                               R"({"cron":"30 2 * * *","timezone":"America/New_York",
                                   "activity_type":"report","input":{"kind":"nightly"},
                                   "catch_up":"none"})");
    REQUIRE(put.status == 200);
    const auto shown = json::parse(http_call(node.port, "GET", "/v1/schedules/nightly").body);
    CHECK(shown["cron"] == "30 2 * * *");
    CHECK(shown["namespace"] == "default");
    CHECK(shown["catch_up"] == "none");
    CHECK(shown["input"] == json{{"kind", "nightly"}});
    REQUIRE(shown["next_fire_times"].size() == 5);
    // 02:30 in New York is 07:30 UTC in winter, 06:30 in summer.
    const auto first = shown["next_fire_times"][0].get<std::string>();
    CHECK((first.find("T07:30:00") != std::string::npos ||
           first.find("T06:30:00") != std::string::npos));
    CHECK(shown["next_fire_at"] == first);
    const auto list = json::parse(http_call(node.port, "GET", "/v1/schedules").body);
    CHECK(list["schedules"].size() == 1);

    const std::vector<std::pair<std::string, std::string>> bad{
        {R"({"activity_type":"a"})", "cron"},
        {R"({"cron":"* * * *","activity_type":"a"})", "cron"},
        {R"({"cron":"0 24 * * *","activity_type":"a"})", "hour"},
        {R"({"cron":"0 0 30 2 *","activity_type":"a"})", "never"},
        {R"({"cron":"* * * * *"})", "activity_type"},
        {R"({"cron":"* * * * *","activity_type":"a","timezone":"Mars/Olympus"})", "timezone"},
        {R"({"cron":"* * * * *","activity_type":"a","timezone":"../../etc/passwd"})", "timezone"},
        {R"({"cron":"* * * * *","activity_type":"a","catch_up":"some"})", "catch_up"},
        {R"({"cron":"* * * * *","activity_type":"a","every":5})", "every"},
        {R"({"cron":"* * * * *","activity_type":"a","input":"a\u0000b"})", "input"},
        {R"({"cron":"* * * * *","activity_type":""})", "activity_type"},
        {R"({"cron":7,"activity_type":"a"})", "cron"},
        {R"([1,2])", "object"},
        {"{", "JSON"},
        // Hostile: NUL, invalid UTF-8, 1 MB strings, 10,000 levels, numbers past any range.
        {R"({"cron":"* * * * *\u0000","activity_type":"a"})", "cron"},
        {"{\"cron\":\"* * * * *\",\"activity_type\":\"a\xff\"}", "JSON"},
        {R"({"cron":")" + std::string(1 << 20, '*') + R"(","activity_type":"a"})", "cron"},
        {R"({"cron":"* * * * *","activity_type":"a","timezone":")" + std::string(1 << 20, 'Z') +
             R"("})",
         "timezone"},
        {R"({"cron":"* * * * *","activity_type":"a","input":)" + std::string(10000, '[') +
             std::string(10000, ']') + "}",
         "levels"},
        {R"({"cron":"99999999999999999999999 * * * *","activity_type":"a"})", "cron"},
        {R"({"cron":"* * * * *","activity_type":"a","workflow_id":")" + std::string(1 << 20, 'w') +
             R"("})",
         "workflow_id"},
    };
    for (const auto& [body, named] : bad) {
        INFO(body);
        const auto got = http_call(node.port, "PUT", "/v1/schedules/x", body);
        CHECK(got.status == 400);
        CHECK_THAT(got.body, Catch::Contains(named));
    }
    CHECK(http_call(node.port, "PUT", "/v1/schedules/no:colons", R"({})").status == 400);
    CHECK(http_call(node.port, "PUT", "/v1/schedules/" + std::string(129, 'a'), R"({})").status ==
          400);
    CHECK(http_call(node.port, "GET", "/v1/schedules/x").status == 404);
    CHECK(http_call(node.port, "DELETE", "/v1/schedules/nightly").status == 200);
    CHECK(http_call(node.port, "DELETE", "/v1/schedules/nightly").status == 404);
    CHECK(http_call(node.port, "POST", "/v1/schedules").status == 405);
}

TEST_CASE("a schedule every minute over three minutes, its owner killed midway, stages three rows",
          "[e2e][schedule]") {
    E2eCluster cluster{"schedule-failover"};
    const std::map<std::string, std::string> env{{"OUTBOXD_LEASE_TTL_MS", "2000"}};
    auto& node1 = cluster.start_node("node-1", env);
    auto& node2 = cluster.start_node("node-2", env);
    REQUIRE(E2eCluster::await([&] { return test::balanced_over(node1, 2); }, 15s));
    REQUIRE(http_call(node1.port, "PUT", "/v1/schedules/tick",
                      R"({"cron":"* * * * *","activity_type":"tick","catch_up":"one"})")
                .status == 200);
    const auto staged = [&] { return cluster.count("dispatch_key LIKE 'schedule:tick:%'"); };
    // The three minute boundaries after the schedule was set.
    const auto first_fire =
        json::parse(http_call(node1.port, "GET", "/v1/schedules/tick").body)["next_fire_at"];
    REQUIRE(E2eCluster::await([&] { return staged() == 1; }, 70s));

    // Kill the node owning the schedule's shard; the other takes it over.
    const auto owner = cluster.db
                           .exec(
                               "SELECT n.node_id FROM schedules s JOIN shard_leases l ON"
                               " l.shard = s.shard JOIN dispatcher_nodes n ON"
                               " n.incarnation = l.owner")[0][0]
                           .as<std::string>();
    auto& victim = owner == "node-1" ? node1 : node2;
    auto& survivor = owner == "node-1" ? node2 : node1;
    // Midway through the minute after the first firing, by the database's clock (the one
    // the schedule fires by).
    REQUIRE(E2eCluster::await(
        [&] {
            return cluster.db
                .exec("SELECT now() >= '" + first_fire.get<std::string>() +
                      "'::timestamptz + interval '20 seconds'")[0][0]
                .as<bool>();
        },
        70s));
    victim.process->signal(SIGKILL);
    REQUIRE(E2eCluster::await([&] { return staged() == 3; }, 130s));
    // No fourth before the fourth minute, and no firing twice: the survivor's schedule job
    // has had two more chances.
    REQUIRE(E2eCluster::await_job_runs(survivor, "schedules", 2, 20s));
    CHECK(staged() <= 3);
    const auto rows = cluster.db.exec(
        "SELECT dispatch_key FROM outbox WHERE dispatch_key LIKE 'schedule:tick:%'"
        " ORDER BY dispatch_key");
    REQUIRE(rows.size() >= 3);
    const auto key_of = [](const std::string& at) {
        return "schedule:tick:" + at.substr(0, 19) + "Z";
    };
    CHECK(rows[0][0].as<std::string>() == key_of(first_fire.get<std::string>()));
    const auto distinct = cluster.db.exec(
        "SELECT count(DISTINCT ordinal) = count(*), max(ordinal) - min(ordinal) FROM outbox"
        " WHERE dispatch_key LIKE 'schedule:tick:%'");
    CHECK(distinct[0][0].as<bool>());
    CHECK(distinct[0][1].as<std::int64_t>() == 120);  // three consecutive minutes
}
