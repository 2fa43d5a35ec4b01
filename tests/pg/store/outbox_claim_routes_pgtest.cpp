// Claims of many routes in one statement, and the probe for routes with due rows.

#include <catch2/catch.hpp>

#include "store_fixture.hpp"

using namespace outboxd;
using store::ClaimScope;
using test::new_row;

namespace {

ClaimScope scope(const std::string& ns, const std::string& queue = "default",
                 std::vector<std::string> types = {}) {
    ClaimScope s;
    s.namespace_name = ns;
    s.task_queue = queue;
    s.activity_types = std::move(types);
    return s;
}

void stage(test::StoreFixture& f, const std::string& ns, const std::string& queue, int count,
           const std::string& activity = "charge") {
    std::vector<store::NewRow> rows;
    for (int i = 0; i < count; ++i) {
        auto row = new_row(ns + "-" + queue + "-" + std::to_string(i), 0, ns, queue);
        row.activity_type = activity;
        rows.push_back(row);
    }
    f.store.append(rows);
}

}  // namespace

TEST_CASE("one statement claims for many routes, each up to its limit, rows told apart by route",
          "[pg][store]") {
    test::StoreFixture f;
    stage(f, "a", "q1", 5);
    stage(f, "a", "q2", 5);
    stage(f, "b", "q1", 5);
    const std::vector<store::ClaimStore::RouteClaim> claims{
        {scope("a", "q1"), 2, std::nullopt},
        {scope("a", "q2"), 10, std::nullopt},
        {scope("b", "q1"), 3, std::nullopt},
        {scope("empty", "q1"), 5, std::nullopt}};
    const auto rows = f.store.claim_routes(f.owner, claims);
    REQUIRE(rows.size() == 4);
    CHECK(rows[0].size() == 2);
    CHECK(rows[1].size() == 5);
    CHECK(rows[2].size() == 3);
    CHECK(rows[3].empty());
    for (std::size_t i = 0; i < 3; ++i) {
        for (const auto& row : rows[i]) {
            CHECK(claims[i].scope.admits(row));
            CHECK(row.claim_token == rows[0][0].claim_token);  // one statement, one token
            CHECK(f.status_of(row.dispatch_key) == store::Status::claimed);
        }
        CHECK(std::is_sorted(rows[i].begin(), rows[i].end(), [](const auto& x, const auto& y) {
            return store::position_of(x) < store::position_of(y);
        }));
    }
    CHECK(f.count("status = 'pending'") == 5);
}

TEST_CASE("a many-route claim honours positions, activity types, pauses and leases",
          "[pg][store]") {
    test::StoreFixture f;
    stage(f, "a", "q", 6);
    stage(f, "b", "q", 2, "email");
    f.store.pause_workflow("a-q-0");
    // The first claim of route a tells where it stood.
    const auto first = f.store.claim_routes(
        f.owner, std::vector<store::ClaimStore::RouteClaim>{{scope("a", "q"), 2, std::nullopt}});
    REQUIRE(first[0].size() == 2);
    CHECK(first[0][0].dispatch_key != "a-q-0:0");  // paused
    const auto after = store::position_of(first[0].back());
    const auto rest = f.store.claim_routes(
        f.owner,
        std::vector<store::ClaimStore::RouteClaim>{{scope("a", "q"), 10, after},
                                                   {scope("b", "q", {"charge"}), 10, std::nullopt},
                                                   {scope("b", "q", {"email"}), 1, std::nullopt}});
    CHECK(rest[0].size() == 3);  // 6, less the paused one and the two taken
    for (const auto& row : rest[0]) CHECK(store::position_of(row) > after);
    CHECK(rest[1].empty());  // no charge rows in b
    CHECK(rest[2].size() == 1);
    // Without a lease on the shards, nothing.
    store::Owner stranger{"node-z/boot-1", store::ShardRanges::all()};
    stage(f, "c", "q", 3);
    CHECK(
        f.store
            .claim_routes(stranger, std::vector<store::ClaimStore::RouteClaim>{{scope("c", "q"), 10,
                                                                                std::nullopt}})[0]
            .empty());
}

TEST_CASE("the due-route probe names the routes a claim would find rows for", "[pg][store]") {
    test::StoreFixture f;
    stage(f, "busy", "q", 3);
    stage(f, "held", "q", 1);
    f.store.pause_workflow("held-q-0");
    auto later = new_row("later-q-0", 0, "later", "q");
    later.visible_after = store::now() + std::chrono::hours{1};
    f.store.append(std::vector{later});
    std::vector<ClaimScope> scopes{scope("idle", "q"), scope("busy", "q"), scope("held", "q"),
                                   scope("later", "q"), scope("busy", "q", {"email"})};
    CHECK(f.store.routes_with_due_rows(f.owner, scopes) == std::vector<std::size_t>{1});
    CHECK(f.store.routes_with_due_rows(f.owner, {}).empty());
}
