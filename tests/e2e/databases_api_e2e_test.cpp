// The HTTP API and `outboxd ctl` of a real node that serves several outbox databases on the
// test PostgreSQL (README, "HTTP API", "Several databases", "Operator CLI"): ?database= picks
// one, is required where one row, workflow or setting is named, and is checked; listings span
// every database, tagged, and page across them exactly once; bulk actions sum; credentials
// and the audit log stay in the control database; a scoped credential reaches its namespaces
// in every database; ctl --database. A node of one database answers as it always did, its
// items tagged "default".

#include <algorithm>
#include <atomic>
#include <map>
#include <set>
#include <utility>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "e2e_cluster.hpp"

using namespace outboxd;
using namespace std::chrono_literals;
using nlohmann::json;
using test::E2eCluster;
using test::http_call;
using test::TestDatabase;

namespace {

constexpr const char* kAdmin = "databases-admin-token";
const std::vector<std::string> kDatabases{"orders", "billing", "shipping"};

test::HttpResult call(std::uint16_t port, const std::string& method, const std::string& target,
                      const std::string& body = {}, const char* token = kAdmin) {
    return http_call(port, method, target, body, std::string{token});
}

json error_of(const test::HttpResult& result) { return json::parse(result.body)["error"]; }

// `target` with ?database=`database` (or &database=).
std::string in(const std::string& target, const std::string& database) {
    return target + (target.find('?') == std::string::npos ? "?" : "&") + "database=" + database;
}

// Starts a node serving orders (the cluster's own database), billing and shipping.
std::uint16_t start_three(E2eCluster& cluster, std::map<std::string, std::string> env = {},
                          const std::string& control = {}) {
    cluster.add_database("billing");
    cluster.add_database("shipping");
    env.merge(cluster.databases_env("orders", control));
    env.emplace("OUTBOXD_ADMIN_TOKEN", kAdmin);
    return cluster.start_node("node-1", env).port;
}

const TestDatabase& database_of(const E2eCluster& cluster, const std::string& name) {
    return name == "orders" ? cluster.db : cluster.database(name);
}

std::int64_t count(const TestDatabase& db, const std::string& sql) {
    return db.exec(sql)[0][0].as<std::int64_t>();
}

std::string stage_body(const std::string& workflow, const std::string& ns,
                       const json& input = nullptr) {
    return json{{"rows",
                 {{{"workflow_id", workflow},
                   {"ordinal", 0},
                   {"activity_type", "charge"},
                   {"namespace", ns},
                   {"input", input},
                   {"visible_after", "2099-01-01T00:00:00Z"}}}}}
        .dump();
}

// `n` dead letters in namespace `ns` of `db`, keys "<prefix>-<g>", failed at four instants
// only (ties within and across databases), plus one pending row no listing shows.
void dead_letters(const TestDatabase& db, const std::string& prefix, int n,
                  const std::string& ns = "billing") {
    db.exec(
        "INSERT INTO outbox (dispatch_key, workflow_id, ordinal, activity_type, namespace, "
        "status, attempt, last_error, finished_at) SELECT '" +
        prefix + "-' || g, '" + prefix + "-' || g, 0, 'charge', '" + ns +
        "', 'failed', 1, 'boom', timestamptz '2026-01-01 00:00:00+00' + (g % 4) * "
        "interval '1 second' FROM generate_series(1, " +
        std::to_string(n) + ") g");
    db.exec(
        "INSERT INTO outbox (dispatch_key, workflow_id, ordinal, activity_type, namespace) "
        "VALUES ('" +
        prefix + "-live', '" + prefix + "-live', 0, 'charge', '" + ns + "')");
}

// Every page of GET `target` (limit and filters in it), following `next`.
std::vector<json> pages(std::uint16_t port, const std::string& target, const char* token = kAdmin) {
    std::vector<json> out;
    std::string after;
    for (int page = 0; page < 100; ++page) {
        const auto got =
            call(port, "GET", after.empty() ? target : target + "&after=" + after, {}, token);
        INFO(target << " -> " << got.body);
        REQUIRE(got.status == 200);
        out.push_back(json::parse(got.body));
        if (out.back()["next"].is_null()) break;
        after = out.back()["next"].get<std::string>();
    }
    return out;
}

// `outboxd ctl` run against the node: its exit status and what it printed.
struct CtlRun {
    int status = -1;
    std::string output;
};

CtlRun ctl(const E2eCluster& cluster, std::uint16_t port, std::vector<std::string> args,
           std::map<std::string, std::string> env = {}) {
    static std::atomic<int> runs{0};
    std::vector<std::string> argv{test::bin_dir() + "/outboxd", "ctl", "--url",
                                  "http://127.0.0.1:" + std::to_string(port)};
    argv.insert(argv.end(), args.begin(), args.end());
    env.emplace("OUTBOXD_ADMIN_TOKEN", kAdmin);
    test::Process process{argv, env, cluster.dir() + "/ctl-" + std::to_string(runs++) + ".log"};
    const auto status = process.wait(60s);
    return {status.value_or(-1), process.log()};
}

}  // namespace

TEST_CASE("several databases: ?database= picks one, is required for one row, and is checked",
          "[e2e][api][databases]") {
    E2eCluster cluster{"databases_pick"};
    const auto port = start_three(cluster);

    // The same key in every database, each with its own input.
    for (const auto& name : kDatabases) {
        const auto staged =
            call(port, "POST", in("/v1/outbox", name), stage_body("wf", "default", {{"in", name}}));
        INFO(staged.body);
        REQUIRE(staged.status == 200);
        CHECK(json::parse(staged.body) == json{{"staged", 1}, {"duplicates", 0}});
    }
    for (const auto& name : kDatabases) {
        INFO(name);
        CHECK(count(database_of(cluster, name), "SELECT count(*) FROM outbox") == 1);
        const auto row = call(port, "GET", in("/v1/outbox/wf:0", name));
        REQUIRE(row.status == 200);
        CHECK(json::parse(row.body)["database"] == name);
        CHECK(json::parse(row.body)["input"] == json{{"in", name}});
    }

    SECTION("a route that names one row, workflow or setting needs it") {
        const std::vector<std::pair<std::string, std::string>> routes{
            {"POST", "/v1/outbox"},
            {"GET", "/v1/outbox/wf:0"},
            {"GET", "/v1/workflows/wf"},
            {"POST", "/v1/workflows/wf/pause"},
            {"POST", "/v1/workflows/wf/resume"},
            {"POST", "/v1/workflows/wf/cancel"},
            {"POST", "/v1/workflows/wf/uncancel"},
            {"POST", "/v1/dead-letters/wf:0/requeue"},
            {"GET", "/v1/namespaces/default"},
            {"PUT", "/v1/namespaces/default"},
            {"GET", "/v1/schedules/nightly"},
            {"PUT", "/v1/schedules/nightly"},
            {"DELETE", "/v1/schedules/nightly"},
            {"GET", "/v1/http-targets/hook"},
            {"PUT", "/v1/http-targets/hook"},
            {"DELETE", "/v1/http-targets/hook"}};
        for (const auto& [method, target] : routes) {
            INFO(method << " " << target);
            const auto body = target == "/v1/outbox" ? stage_body("other", "default")
                              : method == "PUT"      ? std::string{R"({"weight":2})"}
                                                     : std::string{};
            const auto refused = call(port, method, target, body);
            CHECK(refused.status == 400);
            CHECK(error_of(refused)["code"] == "database_required");
            const auto message = error_of(refused)["message"].get<std::string>();
            for (const auto& name : kDatabases) CHECK_THAT(message, Catch::Contains(name));
        }
        CHECK(count(cluster.db, "SELECT count(*) FROM paused_workflows") == 0);
    }

    SECTION("a bad or unknown name is refused anywhere, naming the parameter; nothing changes") {
        const std::vector<std::pair<std::string, std::string>> routes{
            {"POST", "/v1/outbox"},
            {"GET", "/v1/dead-letters"},
            {"GET", "/v1/namespaces"},
            {"POST", "/v1/dead-letters/purge"},
            {"GET", "/v1/credentials"},
            {"GET", "/v1/audit"},
            {"POST", "/v1/workflows/wf/cancel"}};
        const std::vector<std::string> bad{"database=",
                                           "database=Orders",
                                           "database=a.b",
                                           "database=" + std::string(33, 'a'),
                                           "database=" + std::string(10000, 'a'),
                                           "database=orders&database=billing",
                                           "database=orders&database=orders",
                                           "database=ord%00ers",
                                           "database=caf%C3%A9",
                                           "database=%ff%fe",
                                           "database=orders%20"};
        for (const auto& [method, target] : routes) {
            const auto body = target == "/v1/outbox" ? stage_body("new", "default") : "";
            for (const auto& query : bad) {
                INFO(method << " " << target << "?" << query.substr(0, 80));
                const auto refused = call(port, method, target + "?" + query, body);
                CHECK(refused.status == 400);
                CHECK_THAT(error_of(refused)["message"].get<std::string>(),
                           Catch::Contains("'database'"));
                CHECK(refused.body.size() < 1000);  // a 10 KB value is not echoed
            }
            INFO(method << " " << target);
            const auto unknown = call(port, method, in(target, "nope"), body);
            CHECK(unknown.status == 404);
            CHECK(error_of(unknown)["code"] == "unknown_database");
            CHECK_THAT(error_of(unknown)["message"].get<std::string>(),
                       Catch::Contains("nope") && Catch::Contains("shipping"));
        }
        for (const auto& name : kDatabases) {
            const auto& db = database_of(cluster, name);
            CHECK(count(db, "SELECT count(*) FROM outbox WHERE status = 'pending'") == 1);
            CHECK(count(db, "SELECT count(*) FROM cancelled_workflows") == 0);
        }
    }

    SECTION("a workflow's actions act in the database named only") {
        REQUIRE(call(port, "POST", in("/v1/workflows/wf/pause", "billing")).status == 200);
        CHECK(count(cluster.database("billing"), "SELECT count(*) FROM paused_workflows") == 1);
        CHECK(count(cluster.db, "SELECT count(*) FROM paused_workflows") == 0);
        const auto paused = json::parse(call(port, "GET", in("/v1/workflows/wf", "billing")).body);
        CHECK(paused["paused"] == true);
        CHECK(paused["database"] == "billing");
        CHECK(json::parse(call(port, "GET", in("/v1/workflows/wf", "orders")).body)["paused"] ==
              false);
        const auto cancelled = call(port, "POST", in("/v1/workflows/wf/cancel", "shipping"));
        REQUIRE(cancelled.status == 200);
        CHECK(json::parse(cancelled.body)["cancelled"] == json{"wf:0"});
        CHECK(count(cluster.database("shipping"),
                    "SELECT count(*) FROM outbox WHERE status = 'cancelled'") == 1);
        CHECK(count(cluster.db, "SELECT count(*) FROM outbox WHERE status = 'pending'") == 1);
        CHECK(count(cluster.database("billing"),
                    "SELECT count(*) FROM outbox WHERE status = 'pending'") == 1);
    }
}

TEST_CASE("several databases: listings are tagged and complete, pages cross them once, bulk sums",
          "[e2e][api][databases]") {
    E2eCluster cluster{"databases_lists"};
    const auto port = start_three(cluster);
    const std::map<std::string, int> letters{{"orders", 7}, {"billing", 5}, {"shipping", 4}};
    for (const auto& [name, n] : letters) dead_letters(database_of(cluster, name), name, n);

    // Pages of 3 over every database: 16 letters, each once, in one order.
    std::set<std::pair<std::string, std::string>> seen;
    std::vector<json> listed;
    const auto all = pages(port, "/v1/dead-letters?limit=3");
    CHECK(all.size() == 6);  // 3, 3, 3, 3, 3, 1
    for (const auto& page : all) {
        for (const auto& letter : page["dead_letters"]) {
            const auto database = letter["database"].get<std::string>();
            const auto key = letter["dispatch_key"].get<std::string>();
            CHECK(key.starts_with(database + "-"));
            CHECK(seen.emplace(database, key).second);
            listed.push_back(letter);
        }
        if (!page["next"].is_null()) {
            // A cursor across databases names the database its page ended in.
            CHECK(page["next"].get<std::string>().ends_with(
                "." + page["dead_letters"].back()["database"].get<std::string>()));
        }
    }
    CHECK(seen.size() == 16);
    for (std::size_t i = 1; i < listed.size(); ++i) {
        const auto& a = listed[i - 1];
        const auto& b = listed[i];
        INFO(a.dump() << " then " << b.dump());
        CHECK(a["failed_at"] >= b["failed_at"]);
        if (a["failed_at"] == b["failed_at"]) CHECK(a["database"] <= b["database"]);
    }

    // Within one database: its letters only, tagged, a cursor of its own.
    const auto billing = pages(port, "/v1/dead-letters?database=billing&limit=2");
    CHECK(billing.size() == 3);
    std::set<std::string> billing_keys;
    for (const auto& page : billing) {
        for (const auto& letter : page["dead_letters"]) {
            CHECK(letter["database"] == "billing");
            billing_keys.insert(letter["dispatch_key"].get<std::string>());
        }
        if (!page["next"].is_null()) {
            const auto next = page["next"].get<std::string>();
            CHECK(std::count(next.begin(), next.end(), '.') == 1);
        }
    }
    CHECK(billing_keys.size() == 5);
    // One database's cursor cannot page a listing of all of them.
    const auto own_cursor =
        json::parse(call(port, "GET", "/v1/dead-letters?database=billing&limit=2").body)["next"];
    const auto mixed = call(port, "GET", "/v1/dead-letters?after=" + own_cursor.get<std::string>());
    CHECK(mixed.status == 400);
    CHECK_THAT(error_of(mixed)["message"].get<std::string>(), Catch::Contains("after"));

    // Namespaces of every database, tagged; of one.
    const auto namespaces = json::parse(call(port, "GET", "/v1/namespaces").body)["namespaces"];
    std::set<std::string> with_billing;
    for (const auto& ns : namespaces) {
        if (ns["namespace"] == "billing") {
            with_billing.insert(ns["database"].get<std::string>());
            CHECK(ns["dead_letters"] == letters.at(ns["database"].get<std::string>()));
        }
    }
    CHECK(with_billing == std::set<std::string>{"orders", "billing", "shipping"});
    const auto one = json::parse(call(port, "GET", in("/v1/namespaces", "shipping")).body);
    REQUIRE(one["namespaces"].size() == 1);
    CHECK(one["namespaces"][0]["database"] == "shipping");

    // Bulk requeue over every database: at most `limit` in all, database after database.
    const auto requeued = call(port, "POST", "/v1/dead-letters/requeue", R"({"limit":10})");
    REQUIRE(requeued.status == 200);
    CHECK(json::parse(requeued.body) ==
          json{{"requeued", 10}, {"by_database", {{"orders", 7}, {"billing", 3}}}});
    CHECK(count(cluster.db, "SELECT count(*) FROM outbox WHERE status = 'failed'") == 0);
    CHECK(count(cluster.database("billing"),
                "SELECT count(*) FROM outbox WHERE status = 'failed'") == 2);
    CHECK(count(cluster.database("shipping"),
                "SELECT count(*) FROM outbox WHERE status = 'failed'") == 4);
    // Each database changed is audited, in the control database (orders, the first).
    const auto audited = cluster.db.exec(
        "SELECT database FROM audit_log WHERE route = '/v1/dead-letters/requeue' ORDER BY id");
    REQUIRE(audited.size() == 2);
    CHECK(audited[0][0].as<std::string>() == "orders");
    CHECK(audited[1][0].as<std::string>() == "billing");

    // Within one database; then over all of them.
    const auto shipping = call(port, "POST", in("/v1/dead-letters/purge", "shipping"), "{}");
    REQUIRE(shipping.status == 200);
    CHECK(json::parse(shipping.body) == json{{"purged", 4}, {"by_database", {{"shipping", 4}}}});
    CHECK(count(cluster.database("billing"),
                "SELECT count(*) FROM outbox WHERE status = 'failed'") == 2);
    const auto rest = call(port, "POST", "/v1/dead-letters/purge", R"({"namespace":"billing"})");
    REQUIRE(rest.status == 200);
    CHECK(json::parse(rest.body) ==
          json{{"purged", 2}, {"by_database", {{"orders", 0}, {"billing", 2}, {"shipping", 0}}}});
    for (const auto& name : kDatabases) {
        CHECK(count(database_of(cluster, name),
                    "SELECT count(*) FROM outbox WHERE status = 'failed'") == 0);
    }
}

TEST_CASE("several databases: namespace settings, HTTP targets and schedules are per database",
          "[e2e][api][databases]") {
    E2eCluster cluster{"databases_settings"};
    const auto port = start_three(cluster, {{"OUTBOXD_HTTP_ALLOWED_HOSTS", "hooks.invalid"}});

    // Namespace settings.
    const auto put = call(port, "PUT", in("/v1/namespaces/tenant", "billing"), R"({"weight":5})");
    REQUIRE(put.status == 200);
    CHECK(json::parse(put.body)["database"] == "billing");
    CHECK(count(cluster.database("billing"),
                "SELECT count(*) FROM namespaces WHERE namespace = 'tenant'") == 1);
    CHECK(count(cluster.db, "SELECT count(*) FROM namespaces") == 0);
    const auto there = json::parse(call(port, "GET", in("/v1/namespaces/tenant", "billing")).body);
    CHECK(there["weight"] == 5);
    CHECK(there["database"] == "billing");
    const auto elsewhere =
        json::parse(call(port, "GET", in("/v1/namespaces/tenant", "orders")).body);
    CHECK(elsewhere["configured"] == false);
    CHECK(elsewhere["weight"] == 1);
    const auto listed = json::parse(call(port, "GET", "/v1/namespaces").body)["namespaces"];
    REQUIRE(listed.size() == 1);
    CHECK(listed[0]["database"] == "billing");
    CHECK(listed[0]["settings"]["weight"] == 5);

    // Schedules.
    const std::string schedule =
        R"({"cron":"0 0 1 1 *","namespace":"tenant","activity_type":"report"})";
    REQUIRE(call(port, "PUT", in("/v1/schedules/nightly", "shipping"), schedule).status == 200);
    CHECK(count(cluster.database("shipping"), "SELECT count(*) FROM schedules") == 1);
    CHECK(count(cluster.db, "SELECT count(*) FROM schedules") == 0);
    auto schedules = json::parse(call(port, "GET", "/v1/schedules").body)["schedules"];
    REQUIRE(schedules.size() == 1);
    CHECK(schedules[0]["database"] == "shipping");
    CHECK(schedules[0]["id"] == "nightly");
    CHECK(json::parse(call(port, "GET", in("/v1/schedules", "orders")).body)["schedules"].empty());
    CHECK(
        json::parse(call(port, "GET", in("/v1/schedules/nightly", "shipping")).body)["database"] ==
        "shipping");
    CHECK(call(port, "GET", in("/v1/schedules/nightly", "orders")).status == 404);
    CHECK(call(port, "DELETE", in("/v1/schedules/nightly", "orders")).status == 404);
    CHECK(call(port, "DELETE", in("/v1/schedules/nightly", "shipping")).status == 200);
    CHECK(count(cluster.database("shipping"), "SELECT count(*) FROM schedules") == 0);

    // HTTP targets: one name in two databases is two targets.
    for (const auto& name : {"orders", "billing"}) {
        const auto target = call(port, "PUT", in("/v1/http-targets/hook", name),
                                 json{{"namespace", std::string{"ns-"} + name},
                                      {"url", "https://hooks.invalid/in"},
                                      {"activity_types", {"never"}}}
                                     .dump());
        INFO(target.body);
        REQUIRE(target.status == 200);
        CHECK(json::parse(target.body)["database"] == name);
    }
    auto targets = json::parse(call(port, "GET", "/v1/http-targets").body)["http_targets"];
    REQUIRE(targets.size() == 2);
    CHECK(targets[0]["database"] == "orders");
    CHECK(targets[0]["namespace"] == "ns-orders");
    CHECK(targets[1]["database"] == "billing");
    CHECK(targets[1]["namespace"] == "ns-billing");
    CHECK(call(port, "GET", in("/v1/http-targets/hook", "shipping")).status == 404);
    CHECK(call(port, "DELETE", in("/v1/http-targets/hook", "billing")).status == 200);
    targets = json::parse(call(port, "GET", "/v1/http-targets").body)["http_targets"];
    REQUIRE(targets.size() == 1);
    CHECK(targets[0]["database"] == "orders");
    CHECK(count(cluster.database("billing"), "SELECT count(*) FROM http_targets") == 0);
}

TEST_CASE("several databases: credentials and the audit log stay in the control database",
          "[e2e][api][databases][access]") {
    E2eCluster cluster{"databases_control"};
    // The control database is not the first one.
    const auto port = start_three(cluster, {}, "billing");
    const auto& control = cluster.database("billing");

    // Created while naming another database: it lands in the control database all the same.
    const auto made = call(port, "POST", in("/v1/credentials", "shipping"),
                           R"({"name":"ops","namespaces":["tenant"],"roles":["operator"]})");
    INFO(made.body);
    REQUIRE(made.status == 201);
    const auto id = json::parse(made.body)["id"].get<std::string>();
    const auto secret = json::parse(made.body)["secret"].get<std::string>();
    CHECK(count(control, "SELECT count(*) FROM credentials") == 1);
    CHECK(count(cluster.db, "SELECT count(*) FROM credentials") == 0);
    CHECK(count(cluster.database("shipping"), "SELECT count(*) FROM credentials") == 0);
    CHECK(json::parse(call(port, "GET", in("/v1/credentials", "orders")).body)["credentials"]
              .size() == 1);

    // A change in another database, by that credential: recorded in the control database,
    // naming the database, before the answer went out.
    const auto changed =
        call(port, "PUT", in("/v1/namespaces/tenant", "orders"), R"({"weight":2})", secret.c_str());
    REQUIRE(changed.status == 200);
    const auto row = control.exec(
        "SELECT credential_id, database, namespace FROM audit_log "
        "WHERE route = '/v1/namespaces/{ns}'");
    REQUIRE(row.size() == 1);
    CHECK(row[0][0].as<std::string>() == id);
    CHECK(row[0][1].as<std::string>() == "orders");
    CHECK(row[0][2].as<std::string>() == "tenant");
    for (const auto& name : {"orders", "shipping"}) {
        CHECK(count(database_of(cluster, name), "SELECT count(*) FROM audit_log") == 0);
    }

    // Read from the control database whatever is named; each entry names its database.
    for (const std::string target : {"/v1/audit", "/v1/audit?database=orders"}) {
        const auto entries = json::parse(call(port, "GET", target).body)["audit"];
        REQUIRE(entries.size() == 2);
        CHECK(entries[0]["route"] == "/v1/namespaces/{ns}");
        CHECK(entries[0]["database"] == "orders");
        CHECK(entries[1]["route"] == "/v1/credentials");
        CHECK(entries[1]["database"] == "billing");
    }
    CHECK(call(port, "GET", in("/v1/audit", "nope")).status == 404);
    CHECK(call(port, "DELETE", in("/v1/credentials/" + id, "orders")).status == 200);
    CHECK(count(control, "SELECT count(*) FROM credentials") == 0);
    CHECK(call(port, "GET", in("/v1/namespaces/tenant", "orders"), {}, secret.c_str()).status ==
          401);
}

TEST_CASE("several databases: a scoped credential reaches its namespaces in every database",
          "[e2e][api][databases][access]") {
    E2eCluster cluster{"databases_scoped"};
    const auto port = start_three(cluster);
    const auto made =
        call(port, "POST", "/v1/credentials",
             R"({"name":"a","namespaces":["tenant-a"],"roles":["producer","reader","operator"]})");
    REQUIRE(made.status == 201);
    const auto secret = json::parse(made.body)["secret"].get<std::string>();
    const auto* token = secret.c_str();

    for (const auto& name : kDatabases) {
        INFO(name);
        const auto& db = database_of(cluster, name);
        // Its own namespace in every database; never another's.
        CHECK(call(port, "POST", in("/v1/outbox", name), stage_body("a-wf", "tenant-a"), token)
                  .status == 200);
        CHECK(call(port, "POST", in("/v1/outbox", name), stage_body("b-wf", "tenant-b"), token)
                  .status == 403);
        REQUIRE(call(port, "POST", in("/v1/outbox", name), stage_body("b-wf", "tenant-b")).status ==
                200);
        dead_letters(db, name + "-a", 2, "tenant-a");
        dead_letters(db, name + "-b", 2, "tenant-b");
        CHECK(call(port, "GET", in("/v1/outbox/a-wf:0", name), {}, token).status == 200);
        CHECK(call(port, "GET", in("/v1/outbox/b-wf:0", name), {}, token).status == 404);
        CHECK(call(port, "GET", in("/v1/outbox/b-wf:0", name)).status == 200);
        CHECK(call(port, "POST", in("/v1/workflows/b-wf/pause", name), {}, token).status == 404);
        CHECK(call(port, "POST", in("/v1/dead-letters/" + name + "-b-1:0/requeue", name), {}, token)
                  .status == 404);
    }

    // Listings over every database stay filtered.
    std::set<std::string> databases;
    for (const auto& page : pages(port, "/v1/dead-letters?limit=4", token)) {
        for (const auto& letter : page["dead_letters"]) {
            CHECK(letter["namespace"] == "tenant-a");
            databases.insert(letter["database"].get<std::string>());
        }
    }
    CHECK(databases == std::set<std::string>{"orders", "billing", "shipping"});
    const auto namespaces =
        json::parse(call(port, "GET", "/v1/namespaces", {}, token).body)["namespaces"];
    CHECK(namespaces.size() == 3);
    for (const auto& ns : namespaces) CHECK(ns["namespace"] == "tenant-a");

    // A bulk requeue without a filter takes its own letters only, in every database.
    const auto requeued = call(port, "POST", "/v1/dead-letters/requeue", "{}", token);
    REQUIRE(requeued.status == 200);
    CHECK(json::parse(requeued.body)["requeued"] == 6);
    for (const auto& name : kDatabases) {
        const auto& db = database_of(cluster, name);
        CHECK(count(db,
                    "SELECT count(*) FROM outbox WHERE status = 'failed' "
                    "AND namespace = 'tenant-b'") == 2);
        CHECK(count(db,
                    "SELECT count(*) FROM outbox WHERE status = 'failed' "
                    "AND namespace = 'tenant-a'") == 0);
    }
}

TEST_CASE(
    "one database: ?database=default may be given, items say \"default\", the rest is as it was",
    "[e2e][api][databases]") {
    E2eCluster cluster{"databases_single"};
    const auto port = cluster.start_node("node-1", {{"OUTBOXD_ADMIN_TOKEN", kAdmin}}).port;
    REQUIRE(call(port, "POST", "/v1/outbox", stage_body("wf", "default")).status == 200);
    REQUIRE(call(port, "POST", in("/v1/outbox", "default"), stage_body("wf2", "default")).status ==
            200);
    CHECK(json::parse(call(port, "GET", "/v1/outbox/wf:0").body)["database"] == "default");
    CHECK(call(port, "GET", in("/v1/outbox/wf2:0", "default")).status == 200);
    CHECK(error_of(call(port, "GET", in("/v1/outbox/wf:0", "orders")))["code"] ==
          "unknown_database");
    CHECK(call(port, "GET", in("/v1/outbox/wf:0", "Default")).status == 400);

    dead_letters(cluster.db, "d", 3);
    const auto listed = pages(port, "/v1/dead-letters?limit=2");
    REQUIRE(listed.size() == 2);
    const auto next = listed[0]["next"].get<std::string>();
    CHECK(std::count(next.begin(), next.end(), '.') == 1);  // "<µs>.<id>", as before
    for (const auto& page : listed) {
        for (const auto& letter : page["dead_letters"]) CHECK(letter["database"] == "default");
    }
    const auto requeued = call(port, "POST", "/v1/dead-letters/requeue", "{}");
    CHECK(json::parse(requeued.body) == json{{"requeued", 3}, {"by_database", {{"default", 3}}}});
    for (const auto& ns : json::parse(call(port, "GET", "/v1/namespaces").body)["namespaces"]) {
        CHECK(ns["database"] == "default");
    }
    REQUIRE(call(port, "PUT", "/v1/namespaces/billing", R"({"weight":2})").status == 200);
    const auto audit = json::parse(call(port, "GET", "/v1/audit").body)["audit"];
    REQUIRE(audit.size() == 2);
    CHECK(audit[0]["database"] == "default");
    CHECK(cluster.db.exec("SELECT database FROM audit_log ORDER BY id DESC")[0][0]
              .as<std::string>() == "default");
}

TEST_CASE("outboxd ctl --database: sent on every call, a DATABASE column where several appear",
          "[e2e][ctl][databases]") {
    E2eCluster cluster{"databases_ctl"};
    const auto port = start_three(cluster);
    for (const auto& name : kDatabases) {
        REQUIRE(call(port, "POST", in("/v1/outbox", name), stage_body("wf", "default")).status ==
                200);
        dead_letters(database_of(cluster, name), name, 2);
    }

    const auto shown = ctl(cluster, port, {"--database", "billing", "row", "show", "wf:0"});
    INFO(shown.output);
    CHECK(shown.status == 0);
    CHECK_THAT(shown.output, Catch::Contains("billing"));
    const auto from_env =
        ctl(cluster, port, {"row", "show", "wf:0"}, {{"OUTBOXD_DATABASE", "shipping"}});
    CHECK(from_env.status == 0);
    CHECK_THAT(from_env.output, Catch::Contains("shipping"));
    const auto missing = ctl(cluster, port, {"row", "show", "wf:0"});
    CHECK(missing.status == 1);
    CHECK_THAT(missing.output, Catch::Contains("database_required"));
    const auto unknown = ctl(cluster, port, {"--database", "nope", "namespace", "list"});
    CHECK(unknown.status == 1);
    CHECK_THAT(unknown.output, Catch::Contains("unknown_database"));

    const auto every = ctl(cluster, port, {"dead-letters", "list"});
    CHECK(every.status == 0);
    CHECK(every.output.starts_with("DATABASE  DISPATCH_KEY"));
    for (const auto& name : kDatabases) CHECK_THAT(every.output, Catch::Contains(name + "-1"));
    const auto one = ctl(cluster, port, {"--database", "orders", "dead-letters", "list"});
    CHECK(one.status == 0);
    CHECK(one.output.starts_with("DISPATCH_KEY"));
    CHECK_THAT(one.output, !Catch::Contains("billing-1"));
    CHECK(ctl(cluster, port, {"namespace", "list"}).output.starts_with("DATABASE  NAMESPACE"));

    const auto paused = ctl(cluster, port, {"--database", "shipping", "workflow", "pause", "wf"});
    CHECK(paused.status == 0);
    CHECK(count(cluster.database("shipping"), "SELECT count(*) FROM paused_workflows") == 1);
    CHECK(count(cluster.db, "SELECT count(*) FROM paused_workflows") == 0);
    const auto requeued = ctl(cluster, port, {"dead-letters", "requeue", "--all"});
    CHECK(requeued.status == 0);
    CHECK(requeued.output == "requeued 6 (billing 2, orders 2, shipping 2)\n");
}
