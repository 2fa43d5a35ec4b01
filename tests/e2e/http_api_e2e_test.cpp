// The HTTP API of a real node (README, "HTTP API"), including bad input and the admin token.

#include <set>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "e2e_cluster.hpp"

using namespace outboxd;
using namespace std::chrono_literals;
using nlohmann::json;
using test::E2eCluster;
using test::http_call;

namespace {

constexpr const char* kAdmin = "admin-token";

test::HttpResult call(std::uint16_t port, const std::string& method, const std::string& target,
                      const std::string& body = {}) {
    return http_call(port, method, target, body, std::string{kAdmin});
}

json error_of(const test::HttpResult& result) { return json::parse(result.body)["error"]; }

}  // namespace

TEST_CASE("the HTTP API stages, reports, pauses, cancels, requeues and configures", "[e2e][api]") {
    E2eCluster cluster{"api"};
    auto& node = cluster.start_node("node-1", {{"OUTBOXD_ADMIN_TOKEN", kAdmin},
                                               {"OUTBOXD_MAX_ATTEMPTS", "1"},
                                               {"OUTBOXD_MAX_BODY_BYTES", "65536"}});
    const auto port = node.port;

    SECTION("probes and metrics are open; admin routes need the token") {
        CHECK(http_call(port, "GET", "/healthz").status == 200);
        CHECK(http_call(port, "GET", "/readyz").status == 200);
        CHECK(http_call(port, "GET", "/metrics")
                  .body.find("outboxd_owned_shards{database=\"default\"} 1024") !=
              std::string::npos);
        const auto refused = http_call(port, "GET", "/v1/outbox/x");
        CHECK(refused.status == 401);
        CHECK(error_of(refused)["code"] == "unauthorized");
        CHECK(http_call(port, "GET", "/v1/outbox/x", {}, std::string{"wrong"}).status == 401);
        CHECK(call(port, "GET", "/v1/nowhere").status == 404);
        CHECK(call(port, "DELETE", "/v1/outbox").status == 405);
    }

    SECTION("staging is atomic and idempotent, and rows read back") {
        const std::string body = R"({"rows":[
            {"workflow_id":"wf","ordinal":0,"activity_type":"charge","input":{"amount":5}},
            {"workflow_id":"wf","ordinal":1,"activity_type":"charge","namespace":"billing",
             "task_queue":"slow","node":"box-1","run_id":"r1","dispatch_key":"custom-key",
             "visible_after":"2099-01-01T00:00:00Z"}]})";
        auto staged = call(port, "POST", "/v1/outbox", body);
        REQUIRE(staged.status == 200);
        CHECK(json::parse(staged.body) == json{{"staged", 2}, {"duplicates", 0}});
        staged = call(port, "POST", "/v1/outbox", body);
        CHECK(json::parse(staged.body) == json{{"staged", 0}, {"duplicates", 2}});

        const auto row = json::parse(call(port, "GET", "/v1/outbox/wf:0").body);
        CHECK(row["status"] == "pending");
        CHECK(row["input"] == json{{"amount", 5}});
        CHECK(row["namespace"] == "default");
        const auto custom = json::parse(call(port, "GET", "/v1/outbox/custom-key").body);
        CHECK(custom["namespace"] == "billing");
        CHECK(custom["node"] == "box-1");
        CHECK(custom["visible_after"].get<std::string>().starts_with("2099-01-01T00:00:00"));
        CHECK(call(port, "GET", "/v1/outbox/missing").status == 404);

        // One bad row rejects the batch, naming the row.
        const auto bad = call(port, "POST", "/v1/outbox",
                              R"({"rows":[{"workflow_id":"ok","ordinal":0,"activity_type":"a"},
                                          {"workflow_id":"bad","ordinal":-1,"activity_type":"a"}]})");
        CHECK(bad.status == 400);
        CHECK(error_of(bad)["row"] == 1);
        CHECK_THAT(error_of(bad)["message"].get<std::string>(), Catch::Contains("ordinal"));
        CHECK(call(port, "GET", "/v1/outbox/ok:0").status == 404);
        for (
            const auto* body_text :
            {"not json", "[]", R"({"rows":[]})", R"({"rows":{}})",
             R"({"rows":[{"workflow_id":"x","ordinal":0}]})",
             R"({"rows":[{"workflow_id":"x","ordinal":0,"activity_type":"a","typo":1}]})",
             R"({"rows":[{"workflow_id":"x","ordinal":"0","activity_type":"a"}]})",
             R"({"rows":[{"workflow_id":"x","ordinal":0,"activity_type":"a","visible_after":"soon"}]})"}) {
            const auto refused = call(port, "POST", "/v1/outbox", body_text);
            CHECK(refused.status == 400);
            CHECK_FALSE(error_of(refused)["message"].get<std::string>().empty());
        }
        CHECK(cluster.count("true") == 2);
    }

    SECTION("pause, resume and cancel a workflow") {
        call(port, "POST", "/v1/outbox",
             R"({"rows":[{"workflow_id":"wf","ordinal":0,"activity_type":"a"},
                         {"workflow_id":"wf","ordinal":1,"activity_type":"a"}]})");
        auto paused = json::parse(call(port, "POST", "/v1/workflows/wf/pause").body);
        CHECK(paused["changed"] == true);
        paused = json::parse(call(port, "POST", "/v1/workflows/wf/pause").body);
        CHECK(paused["changed"] == false);
        CHECK(cluster.db.exec("SELECT count(*) FROM paused_workflows")[0][0].as<int>() == 1);
        CHECK(json::parse(call(port, "POST", "/v1/workflows/wf/resume").body)["changed"] == true);
        const auto cancelled = json::parse(call(port, "POST", "/v1/workflows/wf/cancel").body);
        CHECK(cancelled["cancelled"] == json{"wf:0", "wf:1"});
        CHECK(cluster.count("status = 'cancelled'") == 2);
        // A row staged later under the id is cancelled too, until the cancel is forgotten.
        call(port, "POST", "/v1/outbox",
             R"({"rows":[{"workflow_id":"wf","ordinal":2,"activity_type":"a"}]})");
        REQUIRE(E2eCluster::await([&] { return cluster.count("status = 'cancelled'") == 3; }, 10s));
        CHECK(json::parse(call(port, "POST", "/v1/workflows/wf/uncancel").body) ==
              json{{"workflow_id", "wf"}, {"uncancelled", true}});
        CHECK(json::parse(call(port, "POST", "/v1/workflows/wf/uncancel").body)["uncancelled"] ==
              false);
        CHECK(cluster.db.exec("SELECT count(*) FROM cancelled_workflows")[0][0].as<int>() == 0);
        call(port, "POST", "/v1/outbox",
             R"({"rows":[{"workflow_id":"wf","ordinal":3,"activity_type":"a"}]})");
        CHECK(E2eCluster::await_job_runs(node, "reconcile", 2, 10s));
        CHECK(cluster.count("dispatch_key = 'wf:3' AND status = 'pending'") == 1);
        CHECK(cluster.count("status = 'cancelled'") == 3);  // cancelled rows stay cancelled
        CHECK(call(port, "POST", "/v1/workflows/wf/explode").status == 404);
        CHECK(call(port, "GET", "/v1/workflows/wf/pause").status == 405);
    }

    SECTION("dead letters list with their error and requeue") {
        cluster.start_worker("w1", {node.worker_url()}, {"--activity-types", "fail-sometimes"});
        call(port, "POST", "/v1/outbox",
             R"({"rows":[{"workflow_id":"wf","ordinal":0,"activity_type":"fail-sometimes",
                          "input":{"p":1.0}}]})");
        REQUIRE(E2eCluster::await([&] { return cluster.count("status = 'failed'") == 1; }, 30s));
        const auto letters =
            json::parse(call(port, "GET", "/v1/dead-letters?namespace=default&limit=10").body);
        REQUIRE(letters["dead_letters"].size() == 1);
        CHECK(letters["dead_letters"][0]["dispatch_key"] == "wf:0");
        CHECK_FALSE(letters["dead_letters"][0]["last_error"].is_null());
        CHECK(
            json::parse(call(port, "GET", "/v1/dead-letters?namespace=other").body)["dead_letters"]
                .empty());
        CHECK(call(port, "GET", "/v1/dead-letters?limit=0").status == 400);
        CHECK(call(port, "GET", "/v1/dead-letters?limit=abc").status == 400);

        cluster.db.exec("UPDATE outbox SET input = '{\"p\": 0.0}'");
        CHECK(call(port, "POST", "/v1/dead-letters/wf:0/requeue").status == 200);
        CHECK(call(port, "POST", "/v1/dead-letters/wf:0/requeue").status == 404);
        CHECK(E2eCluster::await([&] { return cluster.count("status = 'done'") == 1; }, 30s));
    }

    SECTION("namespaces are configured and read back") {
        const auto fresh = json::parse(call(port, "GET", "/v1/namespaces/tenant-a").body);
        CHECK(fresh["configured"] == false);
        CHECK(fresh["effective_max_in_flight"] == 10000);
        CHECK(fresh["weight"] == 1);
        const auto put = call(
            port, "PUT", "/v1/namespaces/tenant-a",
            R"({"max_in_flight":50,"weight":4,"placement":{"mode":"prefer","nodes":["box-1"]}})");
        REQUIRE(put.status == 200);
        const auto read = json::parse(call(port, "GET", "/v1/namespaces/tenant-a").body);
        CHECK(read["max_in_flight"] == 50);
        CHECK(read["weight"] == 4);
        CHECK(read["placement"] == json{{"mode", "prefer"}, {"nodes", {"box-1"}}});
        for (const auto* body_text :
             {"nope", R"({"max_in_flight":0})", R"({"max_in_flight":"5"})",
              R"({"placement":{"mode":"sometimes"}})", R"({"placement":{"mode":"pinned"}})",
              R"({"placement":{"mode":"pinned","nodes":[""]}})", R"({"quota":5})",
              R"({"weight":0})", R"({"weight":1001})", R"({"weight":2.5})", R"({"weight":"4"})"}) {
            INFO(body_text);
            const auto refused = call(port, "PUT", "/v1/namespaces/tenant-a", body_text);
            CHECK(refused.status == 400);
            if (std::string_view{body_text}.find("weight") != std::string_view::npos) {
                CHECK(refused.body.find("'weight'") != std::string::npos);
            }
        }
        CHECK(json::parse(call(port, "GET", "/v1/namespaces/tenant-a").body)["weight"] == 4);
        CHECK(json::parse(call(port, "GET", "/v1/namespaces/tenant-a").body)["max_in_flight"] ==
              50);
    }

    SECTION("the cluster view lists this node, its URL and its shards") {
        const auto view = json::parse(call(port, "GET", "/v1/cluster").body);
        REQUIRE(view["nodes"].size() == 1);
        CHECK(view["nodes"][0]["node_id"] == "node-1");
        CHECK(view["nodes"][0]["url"] == node.worker_url());
        CHECK(view["nodes"][0]["shards"] == json::array({json::array({0, 1023})}));
    }

    SECTION("oversized bodies are refused") {
        const std::string huge(100 << 10, 'x');  // fits the socket buffers: no write error
        CHECK(call(port, "POST", "/v1/outbox", huge).status == 413);
    }
}

TEST_CASE("dead letters: pages through a cursor, bulk requeue and purge by filter, validated",
          "[e2e][api]") {
    E2eCluster cluster{"dead-letter-ops"};
    auto& node = cluster.start_node("node-1");
    const auto port = node.port;
    cluster.db.exec(
        "INSERT INTO outbox (dispatch_key, workflow_id, ordinal, activity_type, namespace, status, "
        "attempt, last_error, finished_at) SELECT 'd-' || g, 'd-' || g, 0, "
        "CASE WHEN g % 2 = 0 THEN 'charge' ELSE 'email' END, 'billing', 'failed', 1, "
        "CASE WHEN g % 3 = 0 THEN 'HTTP 400: bad card' ELSE 'timeout' END, "
        "now() - g * interval '1 second' FROM generate_series(1, 25) g");

    // Pages of 10 through the cursor: 25 letters, each once.
    std::set<std::string> seen;
    std::string after;
    int pages = 0;
    for (; pages < 10; ++pages) {
        const auto got = http_call(port, "GET",
                                   "/v1/dead-letters?namespace=billing&limit=10" +
                                       (after.empty() ? std::string{} : "&after=" + after));
        REQUIRE(got.status == 200);
        const auto page = json::parse(got.body);
        for (const auto& letter : page["dead_letters"]) seen.insert(letter["dispatch_key"]);
        if (page["next"].is_null()) break;
        after = page["next"].get<std::string>();
    }
    CHECK(seen.size() == 25);
    CHECK(pages == 2);  // 10, 10, then 5 with no next
    const auto type_page = json::parse(
        http_call(port, "GET", "/v1/dead-letters?activity_type=charge&error=bad%20card").body);
    CHECK(type_page["dead_letters"].size() == 4);  // even and divisible by 3: 6, 12, 18, 24

    // Bad filters are refused, naming the parameter, and change nothing.
    for (const auto* bad : {"/v1/dead-letters?older_than_s=-1", "/v1/dead-letters?older_than_s=x",
                            "/v1/dead-letters?after=nonsense", "/v1/dead-letters?colour=red",
                            "/v1/dead-letters?limit=100000"}) {
        INFO(bad);
        CHECK(http_call(port, "GET", bad).status == 400);
    }
    for (const auto* body :
         {R"({"limit":0})", R"({"limit":10001})", R"({"namespace":""})", R"({"older_than_s":"1"})",
          R"({"error_contains":""})", R"({"colour":"red"})", R"([1])", "{bad"}) {
        INFO(body);
        const auto refused = http_call(port, "POST", "/v1/dead-letters/requeue", body);
        CHECK(refused.status == 400);
    }
    CHECK(cluster.count("status = 'failed'") == 25);

    // Requeue what the filter names, bounded by the limit; purge the rest of a type.
    const auto requeued = http_call(port, "POST", "/v1/dead-letters/requeue",
                                    R"({"namespace":"billing","error_contains":"bad card"})");
    REQUIRE(requeued.status == 200);
    CHECK(json::parse(requeued.body)["requeued"] == 8);  // 3, 6, …, 24
    CHECK(cluster.count("status = 'pending'") == 8);
    const auto purged =
        http_call(port, "POST", "/v1/dead-letters/purge", R"({"activity_type":"email","limit":5})");
    REQUIRE(purged.status == 200);
    CHECK(json::parse(purged.body)["purged"] == 5);
    CHECK(cluster.count("status = 'failed'") == 12);
    CHECK(http_call(port, "GET", "/v1/dead-letters/purge").status == 405);
}
