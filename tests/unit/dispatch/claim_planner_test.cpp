#include <catch2/catch.hpp>

#include <map>

#include <numeric>

#include "outboxd/dispatch/claim_planner.hpp"
#include "outboxd/store/shard_ranges.hpp"

using namespace outboxd;
using dispatch::PlanInput;

namespace {

worker::Route route(std::string ns, std::string queue, std::int32_t capacity) {
    store::ClaimScope scope;
    scope.namespace_name = std::move(ns);
    scope.task_queue = std::move(queue);
    scope.activity_types = {"charge"};
    return {scope, capacity, {}};
}

PlanInput input(std::vector<worker::Route> routes, std::int32_t batch,
                std::int64_t quota = 1000000) {
    PlanInput in;
    in.routes = std::move(routes);
    in.quota = [quota](const std::string&) { return quota; };
    in.owned_shards = store::kShardCount;
    in.batch_size = batch;
    return in;
}

std::int64_t total(const std::vector<dispatch::PlannedClaim>& plan, const std::string& ns = "") {
    std::int64_t sum = 0;
    for (const auto& claim : plan) {
        if (ns.empty() || claim.scope.namespace_name == ns) sum += claim.limit;
    }
    return sum;
}

}  // namespace

TEST_CASE("a namespace's ceiling on a node is its share of the shards, rounded up",
          "[unit][dispatch]") {
    CHECK(dispatch::per_node_ceiling(10, store::kShardCount) == 10);
    CHECK(dispatch::per_node_ceiling(10, store::kShardCount / 2) == 5);
    CHECK(dispatch::per_node_ceiling(1, 1) == 1);  // never rounded to nothing
    CHECK(dispatch::per_node_ceiling(0, store::kShardCount) == 0);
    CHECK(dispatch::per_node_ceiling(10, 0) == 0);
}

TEST_CASE("a plan never asks more than the batch, a route's credit or the headroom",
          "[unit][dispatch]") {
    dispatch::FairShare fair;
    SECTION("batch") {
        const auto plan = dispatch::plan_claims(input({route("a", "q", 1000)}, 256), fair);
        REQUIRE(plan.size() == 1);
        CHECK(plan[0].limit == 256);
    }
    SECTION("credit") {
        const auto plan = dispatch::plan_claims(input({route("a", "q", 7)}, 256), fair);
        CHECK(total(plan) == 7);
    }
    SECTION("headroom: quota minus what is claimed") {
        auto in = input({route("a", "q", 100)}, 256, 10);
        in.claimed = {{"a", 8}};
        CHECK(total(dispatch::plan_claims(in, fair)) == 2);
        in.claimed = {{"a", 12}};  // above a lowered quota: nothing, never negative
        CHECK(dispatch::plan_claims(in, fair).empty());
    }
}

TEST_CASE("a namespace's share goes to its routes in chunks, the first one moving on each round",
          "[unit][dispatch]") {
    // An even split when the share is large, each route at most its capacity.
    CHECK(dispatch::deal_over_routes(100, {100, 2, 100}, 0) ==
          std::vector<std::int32_t>{50, 2, 48});
    // A small share goes whole to one route, the one whose turn it is.
    CHECK(dispatch::deal_over_routes(10, {100, 100, 100}, 1) ==
          std::vector<std::int32_t>{0, 10, 0});
    // A route without room passes its turn on.
    CHECK(dispatch::deal_over_routes(10, {3, 100, 100}, 0) == std::vector<std::int32_t>{3, 7, 0});
    // Nobody has room for the rest: it is left out.
    CHECK(dispatch::deal_over_routes(50, {5, 5}, 0) == std::vector<std::int32_t>{5, 5});

    // Over rounds every route is served in turn.
    dispatch::FairShare fair;
    dispatch::RouteRotation rotation;
    std::map<std::string, std::int64_t> served;
    for (int round = 0; round < 30; ++round) {
        const auto plan = dispatch::plan_claims(
            input({route("a", "q1", 100), route("a", "q2", 100), route("a", "q3", 100)}, 10), fair,
            &rotation);
        REQUIRE(plan.size() == 1);  // 10 rows: one route's chunk
        served[plan[0].scope.task_queue] += plan[0].limit;
    }
    CHECK(served == std::map<std::string, std::int64_t>{{"q1", 100}, {"q2", 100}, {"q3", 100}});
}

namespace {

// `count` namespaces served by one worker whose free credit is `free`.
std::vector<worker::Route> one_worker(int count, std::int32_t free, const std::string& queue = "q",
                                      std::uint32_t pool = 0) {
    std::vector<worker::Route> routes;
    for (int i = 0; i < count; ++i) {
        auto r = route("ns" + std::to_string(i), queue, free);
        r.pools = {{pool, free}};
        routes.push_back(std::move(r));
    }
    return routes;
}

}  // namespace

TEST_CASE("routes drawing on one worker's credit never take more than it has together",
          "[unit][dispatch]") {
    dispatch::FairShare fair;
    SECTION("100 namespaces on a worker with 300 free: 300 in all, 3 each") {
        const auto plan = dispatch::plan_claims(input(one_worker(100, 300), 1024), fair);
        CHECK(total(plan) == 300);
        for (const auto& claim : plan) CHECK(claim.limit == 3);
    }
    SECTION("one busy namespace of the hundred may use the worker's whole credit") {
        auto routes = one_worker(100, 500);
        routes.erase(routes.begin() + 1, routes.end());  // only ns0 has due rows
        const auto plan = dispatch::plan_claims(input(routes, 1024), fair);
        REQUIRE(plan.size() == 1);
        CHECK(plan[0].limit == 500);
    }
    SECTION("a namespace over three queues (three workers) gets its share from one of them") {
        std::vector<worker::Route> routes;
        for (std::uint32_t q = 0; q < 3; ++q) {
            for (auto& r : one_worker(100, 340, "q" + std::to_string(q), q)) routes.push_back(r);
        }
        const auto plan = dispatch::plan_claims(input(routes, 1000), fair);
        CHECK(total(plan) == 1000);
        std::map<std::string, std::int64_t> by_queue;
        std::map<std::string, int> claims_of;
        for (const auto& claim : plan) {
            by_queue[claim.scope.task_queue] += claim.limit;
            ++claims_of[claim.scope.namespace_name];
        }
        for (const auto& [queue, rows] : by_queue) CHECK(rows <= 340);
        // A namespace's 10 rows in one chunk of one route (two, where a pool ran out under
        // it): about 100 route claims, not 300 of 3 or 4 rows.
        CHECK(plan.size() <= 102);
        for (const auto& [ns, claims] : claims_of) CHECK(claims <= 2);
    }
}

TEST_CASE("when shared credit runs short, the namespaces it leaves out are served next",
          "[unit][dispatch]") {
    // 10 namespaces of one worker with 20 free, each owed 100 of a 1,000-row batch that
    // other routes (their own workers) cannot use either: the worker decides.
    dispatch::FairShare fair;
    dispatch::RouteRotation rotation;
    std::map<std::string, std::int64_t> served;
    for (int round = 0; round < 50; ++round) {
        const auto plan = dispatch::plan_claims(input(one_worker(10, 20), 1000), fair, &rotation);
        CHECK(total(plan) == 20);
        for (const auto& claim : plan) served[claim.scope.namespace_name] += claim.limit;
    }
    REQUIRE(served.size() == 10);
    for (const auto& [ns, rows] : served) {
        CHECK(rows >= 100 - 16);  // 1,000 rows over 10, within a chunk
        CHECK(rows <= 100 + 16);
    }
}

TEST_CASE("a quiet namespace is served in the round its row is due", "[unit][dispatch]") {
    dispatch::FairShare fair;
    // A busy tenant alone for many rounds, then a quiet one with one due row.
    for (int round = 0; round < 100; ++round) {
        CHECK(total(dispatch::plan_claims(input({route("busy", "q", 1000)}, 256), fair)) == 256);
    }
    const auto plan =
        dispatch::plan_claims(input({route("busy", "q", 1000), route("quiet", "q", 1)}, 256), fair);
    CHECK(total(plan, "quiet") == 1);
    CHECK(total(plan, "busy") == 255);  // what the quiet one cannot use is not wasted
}

TEST_CASE("a tenant with many routes gets the same share as a tenant with one",
          "[unit][dispatch]") {
    dispatch::FairShare fair;
    std::vector<worker::Route> routes{route("one", "q", 1000)};
    for (int q = 0; q < 10; ++q) routes.push_back(route("many", "q" + std::to_string(q), 1000));
    const auto plan = dispatch::plan_claims(input(routes, 200), fair);
    CHECK(total(plan, "one") == 100);
    CHECK(total(plan, "many") == 100);
}
