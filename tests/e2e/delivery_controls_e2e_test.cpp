// Delivery controls (README, "Delivery controls") through real outboxd and outboxd-worker
// processes: ordered delivery and concurrency limits across three nodes under retryable
// failures, random worker delays and a kill -9; rate limits measured over windows; a
// priority row ahead of a backlog; the settings, the workflow view and the blocked gauge
// through the API.

#include <algorithm>
#include <atomic>
#include <csignal>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "api_call.hpp"
#include "e2e_cluster.hpp"

using namespace outboxd;
using namespace std::chrono_literals;
using nlohmann::json;
using test::call_json;
using test::E2eCluster;
using test::http_call;

namespace {

constexpr int kLeaseTtlMs = 2000;

std::map<std::string, std::string> chaos_env() {
    return {{"OUTBOXD_LEASE_TTL_MS", std::to_string(kLeaseTtlMs)},
            {"OUTBOXD_POLL_INTERVAL_MS", "200"},
            {"OUTBOXD_QUOTA_CACHE_TTL_MS", "200"},
            // Retries soon and many times: every row ends done, none dead-lettered.
            {"OUTBOXD_MAX_ATTEMPTS", "60"},
            {"OUTBOXD_BACKOFF_BASE_MS", "5"},
            {"OUTBOXD_BACKOFF_MAX_MS", "100"}};
}

// Sets a namespace's settings through every node: each answers once its own cache has them,
// so every node claims under them from then on.
void configure_everywhere(E2eCluster& cluster, const std::string& ns, const std::string& body) {
    for (const auto& node : cluster.nodes)
        call_json(node.port, "PUT", "/v1/namespaces/" + ns, body);
}

std::vector<std::string> urls(const E2eCluster& cluster) {
    std::vector<std::string> out;
    for (const auto& node : cluster.nodes) out.push_back(node.worker_url());
    return out;
}

// Starts `count` workers of `ns` running fail-sometimes, each with a delivery log.
std::vector<std::string> start_workers(E2eCluster& cluster, const std::string& ns, int count,
                                       const std::string& credit) {
    std::vector<std::string> logs;
    for (int i = 1; i <= count; ++i) {
        const auto name = ns + "-w" + std::to_string(i);
        logs.push_back(cluster.dir() + "/" + name + ".deliveries");
        cluster.start_worker(
            name, urls(cluster),
            {"--namespaces", ns, "--activity-types", "fail-sometimes", "--max-in-flight", credit,
             "--delivery-log", logs.back(), "--seed", std::to_string(i)});
    }
    return logs;
}

void stage_workflows(E2eCluster& cluster, const std::string& ns, int workflows, int rows,
                     const std::string& input) {
    // Staged newest ordinal first, so that the id order is no help.
    cluster.db.exec(
        "INSERT INTO outbox (workflow_id, ordinal, namespace, activity_type, input)"
        " SELECT 'wf-' || w, r, '" +
        ns + "', 'fail-sometimes', '" + input + "' FROM generate_series(1, " +
        std::to_string(workflows) + ") w, generate_series(" + std::to_string(rows - 1) +
        ", 0, -1) r");
}

struct Event {
    std::int64_t at_ms = 0;
    std::string kind;  // deliver, complete, fail
};

// Every worker's delivery log: dispatch_key -> its events, in time order.
std::map<std::string, std::vector<Event>> delivery_events(const std::vector<std::string>& logs) {
    std::map<std::string, std::vector<Event>> events;
    for (const auto& path : logs) {
        std::ifstream in{path};
        for (std::string line; std::getline(in, line);) {
            std::istringstream fields{line};
            Event event;
            std::string task_id;
            std::string key;
            if (fields >> event.kind >> event.at_ms >> task_id >> key) {
                events[key].push_back(event);
            }
        }
    }
    for (auto& [key, list] : events) {
        std::stable_sort(list.begin(), list.end(),
                         [](const Event& a, const Event& b) { return a.at_ms < b.at_ms; });
    }
    return events;
}

// Kills node-2 once a third of `total` rows are done and it holds claims.
void kill_second_node_midway(E2eCluster& cluster, const std::string& ns, int total) {
    REQUIRE(E2eCluster::await(
        [&] {
            return cluster.count("status = 'done' AND namespace = '" + ns + "'") > total / 3 &&
                   cluster.count("status = 'claimed' AND claimed_by LIKE 'node-2/%'") > 0;
        },
        90s));
    cluster.nodes[1].process->signal(SIGKILL);
    REQUIRE(cluster.nodes[1].process->wait(10s));
}

}  // namespace

TEST_CASE("ordered delivery holds across three nodes, retryable failures, delays and a kill -9",
          "[e2e][controls]") {
    constexpr int kWorkflows = 150;
    constexpr int kRows = 8;
    constexpr int kTotal = kWorkflows * kRows;
    E2eCluster cluster{"ordered-chaos"};
    cluster.audit_claims();
    auto& first = cluster.start_node("node-1", chaos_env());
    cluster.start_node("node-2", chaos_env());
    cluster.start_node("node-3", chaos_env());
    REQUIRE(E2eCluster::await([&] { return test::balanced_over(first, 3); }, 15s));
    configure_everywhere(cluster, "ordered", R"({"ordering":"workflow"})");
    CHECK(call_json(first.port, "GET", "/v1/namespaces/ordered")["ordering"] == "workflow");
    const auto logs = start_workers(cluster, "ordered", 3, "64");

    // A fifth of the attempts fail (retryable), each answer after up to 20 ms.
    stage_workflows(cluster, "ordered", kWorkflows, kRows, R"({"p":0.2,"max_ms":20})");
    kill_second_node_midway(cluster, "ordered", kTotal);
    REQUIRE(E2eCluster::await([&] { return cluster.count("status = 'done'") == kTotal; }, 240s));
    CHECK(cluster.count("attempt > 0") > kTotal / 10);  // the failures happened

    // The database's view: no claim of a row before the last end of its predecessor's claims.
    const auto early = cluster.db.exec(R"SQL(
        WITH firsts AS (SELECT row_id, min(at) AS at FROM claim_audit WHERE kind = 'claim'
                        GROUP BY row_id),
             lasts AS (SELECT row_id, max(at) AS at FROM claim_audit WHERE kind = 'end'
                       GROUP BY row_id)
        SELECT o.dispatch_key FROM outbox o
        JOIN outbox p ON p.workflow_id = o.workflow_id AND p.ordinal = o.ordinal - 1
        JOIN firsts f ON f.row_id = o.id JOIN lasts l ON l.row_id = p.id
        WHERE f.at < l.at)SQL");
    for (const auto& r : early)
        UNSCOPED_INFO("claimed before its predecessor ended: " << r[0].c_str());
    CHECK(early.empty());
    CHECK(cluster.overlapping_claims() == 0);

    // The workers' view: no row delivered before its predecessor's last answer.
    const auto events = delivery_events(logs);
    int checked = 0;
    for (int w = 1; w <= kWorkflows; ++w) {
        for (int r = 1; r < kRows; ++r) {
            const auto prefix = "wf-" + std::to_string(w) + ":";
            const auto& mine = events.at(prefix + std::to_string(r));
            const auto& before = events.at(prefix + std::to_string(r - 1));
            const auto first_delivery = std::find_if(mine.begin(), mine.end(), [](const Event& e) {
                                            return e.kind == "deliver";
                                        })->at_ms;
            std::int64_t last_answer = 0;
            for (const auto& e : before) {
                if (e.kind != "deliver") last_answer = std::max(last_answer, e.at_ms);
            }
            INFO(prefix << r << " delivered at " << first_delivery
                        << ", its predecessor last answered at " << last_answer);
            CHECK(first_delivery >= last_answer);
            ++checked;
        }
    }
    CHECK(checked == kWorkflows * (kRows - 1));
}

TEST_CASE("a concurrency limit is never exceeded cluster-wide, through failures and a kill -9",
          "[e2e][controls]") {
    constexpr int kTotal = 1500;
    constexpr int kLimit = 5;
    E2eCluster cluster{"limit-chaos"};
    auto& first = cluster.start_node("node-1", chaos_env());
    cluster.start_node("node-2", chaos_env());
    cluster.start_node("node-3", chaos_env());
    REQUIRE(E2eCluster::await([&] { return test::balanced_over(first, 3); }, 15s));
    configure_everywhere(cluster, "limited",
                         R"({"activities":{"fail-sometimes":{"max_in_flight":5}}})");
    CHECK(call_json(first.port, "GET",
                    "/v1/namespaces/limited")["activities"]["fail-sometimes"]["max_in_flight"] ==
          kLimit);
    start_workers(cluster, "limited", 3, "64");

    // The checker: claimed rows of the limited type, as often as it can read them.
    std::atomic<bool> stop{false};
    std::atomic<std::int64_t> max_seen{0};
    std::atomic<std::int64_t> samples{0};
    std::thread checker([&] {
        auto conn = cluster.db.connect();
        while (!stop) {
            pqxx::nontransaction tx{conn};
            const auto n = tx.exec1(
                                 "SELECT count(*) FROM outbox WHERE status = 'claimed'"
                                 " AND namespace = 'limited'"
                                 " AND activity_type = 'fail-sometimes'")[0]
                               .as<std::int64_t>();
            max_seen = std::max(max_seen.load(), n);
            ++samples;
        }
    });
    cluster.db.exec(
        "INSERT INTO outbox (workflow_id, ordinal, namespace, activity_type, input)"
        " SELECT 'wf-' || g, 0, 'limited', 'fail-sometimes', '{\"p\":0.2,\"max_ms\":10}'"
        " FROM generate_series(1, " +
        std::to_string(kTotal) + ") g");
    kill_second_node_midway(cluster, "limited", kTotal);
    const bool all_done =
        E2eCluster::await([&] { return cluster.count("status = 'done'") == kTotal; }, 240s);
    stop = true;
    checker.join();
    REQUIRE(all_done);
    WARN("concurrency limit " << kLimit << ": the checker's highest count " << max_seen.load()
                              << " over " << samples.load() << " samples");
    CHECK(max_seen <= kLimit);
    // The limit is used, not stranded on one node's share.
    CHECK(max_seen == kLimit);
}

TEST_CASE("a backlog on one node's shards can use the whole concurrency limit", "[e2e][controls]") {
    E2eCluster cluster{"limit-one-node"};
    auto& first = cluster.start_node("node-1", chaos_env());
    cluster.start_node("node-2", chaos_env());
    REQUIRE(E2eCluster::await([&] { return test::balanced_over(first, 2); }, 15s));
    configure_everywhere(cluster, "limited",
                         R"({"activities":{"fail-sometimes":{"max_in_flight":6}}})");
    start_workers(cluster, "limited", 1, "64");
    // 30 rows of workflows whose shards node-1 owns.
    cluster.db.exec(
        "INSERT INTO outbox (workflow_id, ordinal, namespace, activity_type, input)"
        " SELECT w, 0, 'limited', 'fail-sometimes', '{\"p\":0,\"max_ms\":1500}'"
        " FROM (SELECT 'wf-' || g AS w FROM generate_series(1, 400) g) x"
        " WHERE (SELECT owner LIKE 'node-1/%' FROM shard_leases WHERE shard = outbox_shard(w))"
        " LIMIT 30");
    REQUIRE(cluster.count("true") == 30);
    CHECK(E2eCluster::await(
        [&] { return cluster.count("status = 'claimed' AND claimed_by LIKE 'node-1/%'") == 6; },
        10s));
    CHECK(cluster.count("status = 'claimed'") <= 6);
}

TEST_CASE("a rate limit holds over every window, and a backlog is served at its rate",
          "[e2e][controls]") {
    constexpr double kRate = 40;
    constexpr int kBurst = 10;
    E2eCluster cluster{"rate"};
    cluster.audit_claims();
    auto& first = cluster.start_node("node-1", chaos_env());
    cluster.start_node("node-2", chaos_env());
    cluster.start_node("node-3", chaos_env());
    REQUIRE(E2eCluster::await([&] { return test::balanced_over(first, 3); }, 15s));
    configure_everywhere(cluster, "rated", R"({"rate_limit":{"per_second":40,"burst":10}})");
    CHECK(call_json(first.port, "GET", "/v1/namespaces/rated")["rate_limit"] ==
          json{{"per_second", kRate}, {"burst", kBurst}});
    start_workers(cluster, "rated", 2, "256");
    cluster.db.exec(
        "INSERT INTO outbox (workflow_id, ordinal, namespace, activity_type, input)"
        " SELECT 'wf-' || g, 0, 'rated', 'fail-sometimes', '{\"p\":0}'"
        " FROM generate_series(1, 2000) g");
    // Five seconds' worth of dispatches at the rate, after the burst.
    const auto measured = static_cast<std::int64_t>(kRate * 5 + kBurst);
    REQUIRE(E2eCluster::await(
        [&] {
            return cluster.db.exec("SELECT count(*) FROM claim_audit WHERE kind = 'claim'")[0][0]
                       .as<std::int64_t>() >= measured;
        },
        30s));
    // Dispatch instants (the claims), in seconds from the first.
    const auto claims = cluster.db.exec(
        "SELECT extract(epoch FROM at - min(at) OVER ()) FROM claim_audit"
        " WHERE kind = 'claim' ORDER BY at");
    std::vector<double> at;
    for (const auto& r : claims) at.push_back(r[0].as<double>());
    REQUIRE(at.size() > 100);
    const double span = at.back();
    // Over any window of t >= 1 s: at most rate * t + burst (5% slack).
    double worst = 0;
    for (const double window : {1.0, 2.0, 4.0}) {
        for (std::size_t i = 0; i < at.size(); ++i) {
            const auto end = std::upper_bound(at.begin(), at.end(), at[i] + window);
            const auto n = static_cast<double>(end - (at.begin() + static_cast<std::ptrdiff_t>(i)));
            worst = std::max(worst, n / (kRate * window + kBurst));
        }
    }
    // The achieved rate after the burst, with a backlog all along.
    const double achieved = static_cast<double>(at.size() - kBurst) / span;
    WARN("rate limit " << kRate << "/s, burst " << kBurst << ": " << at.size() << " dispatches in "
                       << span << " s, achieved " << achieved
                       << "/s; worst window / bound = " << worst);
    CHECK(worst <= 1.05);
    CHECK(std::abs(achieved - kRate) / kRate <= 0.10);
    // Waiting without spinning: no node ran hundreds of claim rounds a second for it.
    const auto rounds = E2eCluster::metric(first, "outboxd_claim_seconds_count");
    REQUIRE(rounds);
    CHECK(*rounds < 6 * 200);
}

TEST_CASE("a priority row overtakes a backlog on its route", "[e2e][controls]") {
    E2eCluster cluster{"priority"};
    auto& node = cluster.start_node("node-1", chaos_env());
    // One slow worker: 8 rows at a time, 100 ms each.
    cluster.start_worker("slow", {node.worker_url()},
                         {"--activity-types", "fail-sometimes", "--max-in-flight", "8"});
    cluster.db.exec(
        "INSERT INTO outbox (workflow_id, ordinal, activity_type, input)"
        " SELECT 'bulk-' || g, 0, 'fail-sometimes', '{\"p\":0,\"max_ms\":200}'"
        " FROM generate_series(1, 20000) g");
    REQUIRE(E2eCluster::await([&] { return cluster.count("status = 'done'") > 50; }, 30s));
    const auto staged = call_json(node.port, "POST", "/v1/outbox",
                                  R"({"rows":[{"workflow_id":"urgent","ordinal":0,)"
                                  R"("activity_type":"fail-sometimes","input":{"p":0},)"
                                  R"("priority":100}]})");
    INFO(staged.dump());
    const auto started = std::chrono::steady_clock::now();
    REQUIRE(E2eCluster::await(
        [&] { return cluster.count("dispatch_key = 'urgent:0' AND status = 'done'") == 1; }, 10s));
    const auto took = std::chrono::steady_clock::now() - started;
    WARN("priority row done " << std::chrono::duration_cast<std::chrono::milliseconds>(took).count()
                              << " ms after staging, " << cluster.count("status = 'pending'")
                              << " rows of the backlog still pending");
    CHECK(cluster.count("status = 'pending'") > 15000);
    const auto row = call_json(node.port, "GET", "/v1/outbox/urgent:0");
    CHECK(row["priority"] == 100);
}

TEST_CASE("controls are validated, returned, and a blocked workflow is visible",
          "[e2e][controls]") {
    E2eCluster cluster{"controls-api"};
    auto& node = cluster.start_node("node-1", chaos_env());
    const auto refused = [&](const std::string& body, const std::string& field) {
        const auto result = http_call(node.port, "PUT", "/v1/namespaces/bad", body);
        INFO(body << " -> " << result.status << " " << result.body);
        CHECK(result.status == 400);
        CHECK(result.body.find(field) != std::string::npos);
    };
    refused(R"({"ordering":"sometimes"})", "ordering");
    refused(R"({"on_dead_letter":"retry"})", "on_dead_letter");
    refused(R"({"rate_limit":{"per_second":0,"burst":1}})", "per_second");
    refused(R"({"rate_limit":{"per_second":5,"burst":0}})", "burst");
    refused(R"({"activities":{"charge":{"max_in_flight":0}}})", "max_in_flight");
    refused(R"({"activities":{"charge":{"speed":3}}})", "speed");
    refused(R"({"activities":[]})", "activities");
    CHECK(http_call(node.port, "GET", "/v1/namespaces/bad").body.find("\"configured\":false") !=
          std::string::npos);
    const auto bad_priority = http_call(node.port, "POST", "/v1/outbox",
                                        R"({"rows":[{"workflow_id":"w","ordinal":0,)"
                                        R"("activity_type":"a","priority":101}]})");
    CHECK(bad_priority.status == 400);
    CHECK(bad_priority.body.find("priority") != std::string::npos);

    call_json(
        node.port, "PUT", "/v1/namespaces/orders",
        R"({"ordering":"workflow","on_dead_letter":"block",)"
        R"("rate_limit":{"per_second":100,"burst":20},)"
        R"("activities":{"charge":{"max_in_flight":3,"rate_limit":{"per_second":5,"burst":1}}}})");
    const auto got = call_json(node.port, "GET", "/v1/namespaces/orders");
    CHECK(got["ordering"] == "workflow");
    CHECK(got["on_dead_letter"] == "block");
    CHECK(got["rate_limit"]["per_second"] == 100);
    CHECK(got["activities"]["charge"]["max_in_flight"] == 3);
    CHECK(got["activities"]["charge"]["rate_limit"]["burst"] == 1);

    // A workflow whose first row fails for good (a sleep of no number: not retryable): its
    // second row waits behind the dead letter; another workflow goes on.
    cluster.start_worker("w", {node.worker_url()},
                         {"--namespaces", "orders", "--activity-types", "fail-sometimes,sleep"});
    cluster.db.exec(
        "INSERT INTO outbox (workflow_id, ordinal, namespace, activity_type, input) VALUES"
        " ('order-1', 0, 'orders', 'sleep', '{\"ms\":\"soon\"}'),"
        " ('order-1', 1, 'orders', 'fail-sometimes', '{\"p\":0}'),"
        " ('order-2', 0, 'orders', 'fail-sometimes', '{\"p\":0}')");
    REQUIRE(E2eCluster::await([&] { return cluster.count("status = 'failed'") == 1; }, 20s));
    REQUIRE(E2eCluster::await(
        [&] { return cluster.count("dispatch_key = 'order-2:0' AND status = 'done'") == 1; }, 20s));
    // Two reconciles later (the backstop that lets waiting rows go), it still waits.
    REQUIRE(cluster.await_job_runs(node, "reconcile", 2, 10s));
    CHECK(cluster.count("dispatch_key = 'order-1:1' AND status = 'pending'") == 1);
    const auto workflow = call_json(node.port, "GET", "/v1/workflows/order-1");
    INFO(workflow.dump());
    CHECK(workflow["blocked_by"] == "order-1:0");
    REQUIRE(workflow["rows"].size() == 2);
    CHECK(workflow["rows"][0]["status"] == "failed");
    CHECK(workflow["rows"][1]["status"] == "pending");
    CHECK(workflow["rows"][1]["waiting"] == true);
    CHECK(E2eCluster::await(
        [&] {
            const auto gauge = E2eCluster::metric(
                node, R"(outboxd_ordered_blocked_workflows{namespace="orders"})");
            return gauge && *gauge == 1;
        },
        15s));
    // Requeued with a row that now succeeds: the workflow goes on, the gauge goes to 0.
    cluster.db.exec("UPDATE outbox SET input = '{\"ms\":1}' WHERE dispatch_key = 'order-1:0'");
    call_json(node.port, "POST", "/v1/dead-letters/order-1:0/requeue");
    REQUIRE(E2eCluster::await(
        [&] { return cluster.count("workflow_id = 'order-1' AND status = 'done'") == 2; }, 20s));
    CHECK(call_json(node.port, "GET", "/v1/workflows/order-1")["blocked_by"].is_null());
    CHECK(E2eCluster::await(
        [&] {
            const auto gauge = E2eCluster::metric(
                node, R"(outboxd_ordered_blocked_workflows{namespace="orders"})");
            return gauge && *gauge == 0;
        },
        15s));
}
