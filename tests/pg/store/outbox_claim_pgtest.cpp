// Claims: atomic, due-only, ordered, scoped, lease-fenced, pause-aware, concurrent.

#include <mutex>
#include <set>
#include <thread>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "outboxd/store/cluster_store.hpp"
#include "store_fixture.hpp"

using namespace outboxd;
using store::ShardRanges;
using store::Status;
using test::new_row;

TEST_CASE("a claim flips due rows to claimed, oldest first, once", "[pg][store]") {
    test::StoreFixture f;
    auto late = new_row("wf", 0);
    late.visible_after = store::now() - std::chrono::seconds{1};
    auto early = new_row("wf", 1);
    early.visible_after = store::now() - std::chrono::seconds{5};
    auto future = new_row("wf", 2);
    future.visible_after = store::now() + std::chrono::hours{1};
    f.store.append(std::vector{late, early, future});

    const auto claimed = f.store.claim(f.owner, 10);
    REQUIRE(claimed.size() == 2);
    CHECK(claimed[0].dispatch_key == "wf:1");
    CHECK(claimed[1].dispatch_key == "wf:0");
    for (const auto& row : claimed) {
        CHECK(row.status == Status::claimed);
        CHECK(row.claimed_at);
        CHECK(row.claimed_by == f.owner.incarnation);
        CHECK(row.claim_token > 0);
        CHECK(f.status_of(row.dispatch_key) == Status::claimed);
    }
    CHECK(claimed[0].claim_token == claimed[1].claim_token);  // one claim, one token
    CHECK(f.store.claim(f.owner, 10).empty());
    CHECK(f.status_of("wf:2") == Status::pending);
}

TEST_CASE("a claim takes at most its limit", "[pg][store]") {
    test::StoreFixture f;
    std::vector<store::NewRow> rows;
    for (int i = 0; i < 10; ++i) rows.push_back(new_row("wf-" + std::to_string(i), 0));
    f.store.append(rows);
    CHECK(f.store.claim(f.owner, 4).size() == 4);
    CHECK(f.store.claim(f.owner, 0).empty());
    CHECK(f.store.claim(f.owner, 100).size() == 6);
    CHECK_THROWS(f.store.claim(f.owner, -1));
}

TEST_CASE("a scoped claim admits its namespace, queue, node label and activity types",
          "[pg][store]") {
    test::StoreFixture f;
    auto email = new_row("wf-e", 0, "remote", "gpu");
    email.activity_type = "email";
    f.store.append(std::vector{
        new_row("wf-1", 0, "remote", "gpu", "box-7"), new_row("wf-2", 0, "remote", "gpu"),
        new_row("wf-3", 0, "remote", "gpu", "box-9"), new_row("wf-4", 0, "default", "gpu"),
        new_row("wf-5", 0, "remote", "cpu"), email});

    const auto keys = [](const std::vector<store::OutboxRow>& rows) {
        std::set<std::string> out;
        for (const auto& r : rows) out.insert(r.dispatch_key);
        return out;
    };
    // A pool without a node label serves only unpinned rows.
    CHECK(keys(f.store.claim_scoped(f.owner, {"remote", "gpu", std::nullopt, {"charge"}}, 10)) ==
          std::set<std::string>{"wf-2:0"});
    // A labelled pool serves rows pinned to it plus the unpinned rest.
    CHECK(keys(f.store.claim_scoped(f.owner, {"remote", "gpu", "box-7", {"charge"}}, 10)) ==
          std::set<std::string>{"wf-1:0"});
    // No activity filter: any type.
    CHECK(keys(f.store.claim_scoped(f.owner, {"remote", "gpu", std::nullopt, {}}, 10)) ==
          std::set<std::string>{"wf-e:0"});
    CHECK(f.status_of("wf-3:0") == Status::pending);
    // A pool that serves only rows pinned to it leaves unpinned rows alone.
    f.store.append(std::vector{new_row("wf-6", 0, "remote", "gpu"),
                               new_row("wf-7", 0, "remote", "gpu", "box-9")});
    store::ClaimScope pinned_only{"remote", "gpu", "box-9", {}};
    pinned_only.include_unpinned = false;
    CHECK(keys(f.store.claim_scoped(f.owner, pinned_only, 10)) ==
          std::set<std::string>{"wf-3:0", "wf-7:0"});
    CHECK(f.status_of("wf-6:0") == Status::pending);
    CHECK(f.status_of("wf-4:0") == Status::pending);
    CHECK(f.status_of("wf-5:0") == Status::pending);
}

TEST_CASE("a paused workflow's early rows do not starve the rest of its route", "[pg][store]") {
    test::StoreFixture f;
    std::vector<store::NewRow> rows;
    for (int i = 0; i < 20; ++i) {
        auto row = new_row("paused-wf", i);
        row.visible_after = store::now() - std::chrono::minutes{10};  // due first
        rows.push_back(row);
    }
    for (int i = 0; i < 5; ++i) rows.push_back(new_row("live-wf", i));
    f.store.append(rows);
    CHECK(f.store.pause_workflow("paused-wf"));
    CHECK_FALSE(f.store.pause_workflow("paused-wf"));
    CHECK(f.store.is_paused("paused-wf"));

    for (int sweep = 0; sweep < 3; ++sweep) {
        const auto scoped = f.store.claim_scoped(f.owner, {"default", "default", {}, {}}, 2);
        const auto unscoped = f.store.claim(f.owner, 1);
        for (const auto& row : scoped) CHECK(row.workflow_id == "live-wf");
        for (const auto& row : unscoped) CHECK(row.workflow_id == "live-wf");
    }
    CHECK(f.count("workflow_id = 'live-wf' AND status = 'claimed'") == 5);
    CHECK(f.count("workflow_id = 'paused-wf' AND status = 'pending'") == 20);
    CHECK(f.store.pending_routes(ShardRanges::all()).empty());  // held rows are not claimable

    CHECK(f.store.resume_workflow("paused-wf"));
    CHECK_FALSE(f.store.resume_workflow("paused-wf"));
    CHECK(f.store.claim(f.owner, 100).size() == 20);
}

TEST_CASE("claims outside the owned ranges see nothing", "[pg][store]") {
    test::StoreFixture f;
    std::vector<store::NewRow> rows;
    for (int i = 0; i < 200; ++i) rows.push_back(new_row("wf-" + std::to_string(i), 0));
    f.store.append(rows);
    const ShardRanges lower{{{0, 511}}};
    const store::Owner lower_owner{f.owner.incarnation, lower};
    const auto claimed = f.store.claim(lower_owner, 1000);
    const auto expected = f.count("shard <= 511");
    CHECK(static_cast<std::int64_t>(claimed.size()) == expected);
    for (const auto& row : claimed) CHECK(lower.contains(row.shard));
    CHECK(f.store.claim_scoped(lower_owner, {}, 1000).empty());
    CHECK(f.count("status = 'pending' AND shard <= 511") == 0);
    CHECK(f.count("status = 'pending' AND shard > 511") == 200 - expected);

    // Enumerations are scoped the same way.
    const ShardRanges upper{{{512, 1023}}};
    CHECK(f.store.count_inflight("default", upper) == 200 - expected);
    CHECK(f.store.count_claimed("default", upper) == 0);
    CHECK(f.store.count_claimed("default", lower) == expected);
    CHECK(f.store.list_unsettled_workflow_ids(upper).size() ==
          static_cast<std::size_t>(200 - expected));
    CHECK(f.store.claim(store::Owner{f.owner.incarnation, ShardRanges::none()}, 1000).empty());
}

TEST_CASE("a claim needs an unexpired lease on the shard, by the database clock", "[pg][store]") {
    test::StoreFixture f;
    f.store.append(std::vector{new_row("wf", 0)});
    const store::Owner stranger{"node-b/boot-1", ShardRanges::all()};
    CHECK(f.store.claim(stranger, 10).empty());  // leased to node-a

    store::ClusterStore cluster{f.db.url()};
    cluster.register_node("node-b", stranger.incarnation, "ws://b/v1/workers");
    REQUIRE(cluster.beat(stranger.incarnation, false, std::chrono::hours{1}));
    CHECK(cluster.acquire_shards(stranger.incarnation, ShardRanges::all())
              .empty());  // node-a's lease is valid
    f.db.exec(
        "UPDATE dispatcher_nodes SET lease_expires_at = now() - interval '1 second'"
        " WHERE incarnation = '" +
        f.owner.incarnation + "'");
    CHECK(f.store.claim(f.owner, 10).empty());  // node-a's lease lapsed
    // node-a renews before anyone took its shards: they are its own again.
    REQUIRE(cluster.beat(f.owner.incarnation, false, std::chrono::hours{1}) == ShardRanges::all());
    CHECK(f.store.claim(f.owner, 10).size() == 1);
    f.db.exec(
        "UPDATE outbox SET status = 'pending', claimed_at = NULL, claimed_by = NULL,"
        " claim_token = NULL");
    f.db.exec(
        "UPDATE dispatcher_nodes SET lease_expires_at = now() - interval '1 second'"
        " WHERE incarnation = '" +
        f.owner.incarnation + "'");
    CHECK(cluster.acquire_shards(stranger.incarnation, ShardRanges::all()) == ShardRanges::all());
    // node-a renews too late: its shards are node-b's now.
    REQUIRE(cluster.beat(f.owner.incarnation, false, std::chrono::hours{1}) == ShardRanges::none());
    CHECK(f.store.claim(f.owner, 10).empty());
    CHECK(f.store.claim(stranger, 10).size() == 1);
}

TEST_CASE("eight concurrent claimers never share a row and together claim every row",
          "[pg][store]") {
    test::StoreFixture f;
    constexpr int kRows = 4000;
    std::vector<store::NewRow> rows;
    for (int i = 0; i < kRows; ++i) rows.push_back(new_row("wf-" + std::to_string(i % 97), i));
    f.store.append(rows);

    std::mutex mutex;
    std::vector<std::int64_t> seen;
    std::vector<std::thread> claimers;
    for (int t = 0; t < 8; ++t) {
        claimers.emplace_back([&, t] {
            test::TestStore own{f.db.url()};  // a connection per thread
            const bool scoped = t % 2 == 0;
            while (true) {
                const auto batch =
                    scoped ? own.claim_scoped(f.owner, {"default", "default", {}, {}}, 37)
                           : own.claim(f.owner, 37);
                if (batch.empty()) break;
                std::lock_guard lock{mutex};
                for (const auto& row : batch) seen.push_back(row.id);
            }
        });
    }
    for (auto& t : claimers) t.join();
    const std::set<std::int64_t> unique(seen.begin(), seen.end());
    CHECK(seen.size() == static_cast<std::size_t>(kRows));
    CHECK(unique.size() == static_cast<std::size_t>(kRows));
    CHECK(f.count("status = 'claimed'") == kRows);
}

TEST_CASE("a scoped claim after a position reads only rows past it in claim order", "[pg][store]") {
    test::StoreFixture f;
    const auto base = store::now() - std::chrono::minutes{10};
    std::vector<store::NewRow> rows;
    for (int i = 0; i < 6; ++i) {
        auto row = new_row("wf-" + std::to_string(i), 0);
        row.visible_after = base + std::chrono::seconds{i / 2};  // two rows per instant
        rows.push_back(row);
    }
    f.store.append(rows);
    const store::ClaimScope scope{"default", "default", std::nullopt, {}};
    const auto first = f.store.claim_scoped(f.owner, scope, 3);
    REQUIRE(first.size() == 3);
    const auto mark = store::position_of(first.back());

    // A row staged now but due long ago sits behind the mark: a claim after it skips it,
    // while ties at the mark's instant are split by id.
    auto behind = new_row("wf-late", 0);
    behind.visible_after = base - std::chrono::minutes{1};
    f.store.append(std::vector{behind});
    const auto after = f.store.claim_scoped(f.owner, scope, 10, mark);
    std::set<std::string> keys;
    for (const auto& row : after) {
        CHECK(store::position_of(row) > mark);
        keys.insert(row.dispatch_key);
    }
    CHECK(keys == std::set<std::string>{"wf-3:0", "wf-4:0", "wf-5:0"});
    CHECK(first.back().dispatch_key == "wf-2:0");  // the mark ties with wf-3 on visible_after
    CHECK(f.status_of("wf-late:0") == Status::pending);
    // From the front, it is found.
    const auto front = f.store.claim_scoped(f.owner, scope, 10);
    REQUIRE(front.size() == 1);
    CHECK(front[0].dispatch_key == "wf-late:0");
}

TEST_CASE("a claimer releases its own claims above a token, and only those", "[pg][store]") {
    test::StoreFixture f;
    std::vector<store::NewRow> rows;
    for (int i = 0; i < 7; ++i) rows.push_back(new_row("wf-" + std::to_string(i), 0));
    f.store.append(rows);
    const auto seen = f.store.claim(f.owner, 2);  // a claim the claimer knows about
    REQUIRE(seen.size() == 2);
    const auto unseen = f.store.claim(f.owner, 2);  // one whose answer was lost
    REQUIRE(unseen.size() == 2);
    // A claim that ran beside the lost one (a claim apart) and came back: kept.
    const auto beside = f.store.claim(f.owner, 1);
    REQUIRE(beside.size() == 1);
    const std::vector<std::int64_t> kept{beside[0].claim_token};
    // Another claimer's claim, under a later token.
    const auto foreign_key = f.db.exec(
                                     "UPDATE outbox SET status = 'claimed', claimed_at = now(), "
                                     "claimed_by = 'node-b/boot-1',"
                                     " claim_token = nextval('outbox_claim_token_seq') WHERE id = "
                                     "(SELECT min(id) FROM outbox"
                                     " WHERE status = 'pending') RETURNING dispatch_key")[0][0]
                                 .as<std::string>();

    CHECK(f.store.release_claims_after(f.owner, seen[0].claim_token, kept) == 2);
    for (const auto& row : unseen) {
        CHECK(f.status_of(row.dispatch_key) == Status::pending);
        CHECK(f.store.find(row.dispatch_key)->attempt == 0);
        CHECK(f.store.find(row.dispatch_key)->deliveries == 0);  // the lost claim reached nobody
    }
    for (const auto& row : seen) CHECK(f.status_of(row.dispatch_key) == Status::claimed);
    CHECK(f.status_of(beside[0].dispatch_key) == Status::claimed);
    CHECK(f.status_of(foreign_key) == Status::claimed);
    CHECK(f.store.release_claims_after(f.owner, seen[0].claim_token, kept) == 0);
}

TEST_CASE("one namespace's claimed count reads only that namespace's claimed rows",
          "[pg][store][tenant]") {
    test::StoreFixture f;
    // A busy namespace with thousands of rows claimed, a quiet one with one.
    f.db.exec(
        "INSERT INTO outbox (workflow_id, ordinal, activity_type, namespace, status, claimed_at,"
        " claimed_by, claim_token)"
        " SELECT 'busy-' || i, 0, 'a', 'busy', 'claimed', now(), 'node-a/boot-1', i"
        " FROM generate_series(1, 5000) i");
    f.store.append(std::vector{new_row("quiet-1", 0, "quiet")});
    REQUIRE(f.store.claim_scoped(f.owner, {"quiet", "default", std::nullopt, {}}, 10).size() == 1);
    f.db.exec("ANALYZE outbox");

    const auto counts =
        f.store.count_claimed_by_namespace(std::vector<std::string>{"quiet"}, ShardRanges::all());
    CHECK(counts.at("quiet") == 1);
    // The plan the store's statement gets for one quiet namespace, with the real numbers.
    const std::string plan_of =
        "EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) SELECT namespace, count(*) FROM outbox"
        " WHERE status = 'claimed' AND namespace = ANY ('{quiet}'::text[])"
        " AND shard <@ '{[0,1024)}'::int4multirange GROUP BY namespace";
    const auto plan = nlohmann::json::parse(f.db.exec(plan_of)[0][0].as<std::string>())[0]["Plan"];
    INFO(plan.dump(2));
    CHECK(plan.dump().find("outbox_claimed_namespace_idx") != std::string::npos);
    // Before (an index led by claimed_at): every claimed row's entry, 5,001 rows read.
    CHECK(plan["Shared Hit Blocks"].get<long>() + plan["Shared Read Blocks"].get<long>() < 20);
}
