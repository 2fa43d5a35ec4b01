// Delivery controls in the store (README, "Delivery controls"): priorities, ordered delivery
// per workflow, concurrency and rate limits, against a real PostgreSQL.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

#include "outboxd/dispatch/claim_limits.hpp"
#include "store/admin_sql.hpp"
#include "store_fixture.hpp"

namespace outboxd {
namespace {

using store::ClaimRef;
using store::ClaimScope;
using store::ClaimStore;
using store::OutboxRow;
using store::Outcome;
using store::Status;
using test::new_row;
using namespace std::chrono_literals;

ClaimRef ref_of(const OutboxRow& row) { return {row.id, row.claim_token}; }

ClaimStore::ClaimControls ordered(bool block = true) {
    ClaimStore::ClaimControls controls;
    controls.ordered = true;
    controls.block_on_dead_letter = block;
    return controls;
}

// An outcome that ends an ordered workflow's row: the write lets its next row go.
Outcome ending(Outcome outcome, const OutboxRow& row) {
    outcome.let_go_workflow = row.workflow_id;
    outcome.let_go_task_queue = row.task_queue;
    return outcome;
}

std::vector<std::string> keys(const std::vector<OutboxRow>& rows) {
    std::vector<std::string> out;
    for (const auto& row : rows) out.push_back(row.dispatch_key);
    return out;
}

}  // namespace

TEST_CASE("a priority row is claimed first, however long the backlog of priority 0 before it",
          "[pg][store][controls]") {
    test::StoreFixture f;
    // 200,000 rows of priority 0, older than anything after them.
    f.db.exec(
        "INSERT INTO outbox (workflow_id, ordinal, activity_type, visible_after)"
        " SELECT 'bulk-' || i, 0, 'a', now() - interval '1 hour' FROM generate_series(1, 200000) "
        "i");
    auto low = new_row("low", 0);
    low.priority = 10;
    auto high = new_row("high", 0);
    high.priority = 90;
    auto also_high = new_row("high-2", 0);
    also_high.priority = 90;
    f.store.append(std::vector{low, high, also_high});
    f.db.exec("ANALYZE outbox");

    SECTION("one route's claim") {
        // Highest first, oldest first within a priority; a claim that finds priority rows
        // takes only those, the next one the backlog.
        const auto claimed = f.store.claim_scoped(f.owner, ClaimScope{}, 5);
        REQUIRE(claimed.size() == 3);
        CHECK(claimed[0].dispatch_key == "high:0");
        CHECK(claimed[1].dispatch_key == "high-2:0");
        CHECK(claimed[2].dispatch_key == "low:0");
        CHECK(claimed[0].priority == 90);
        const auto next = f.store.claim_scoped(f.owner, ClaimScope{}, 5);
        REQUIRE(next.size() == 5);
        CHECK(next[0].priority == 0);
        CHECK(next[0].dispatch_key.rfind("bulk-", 0) == 0);
    }
    SECTION("the multi-route claim") {
        std::vector<test::TestStore::RouteClaim> claims{{ClaimScope{}, 2, std::nullopt}};
        const auto claimed = f.store.claim_routes(f.owner, claims);
        REQUIRE(claimed[0].size() == 2);
        CHECK(keys(claimed[0]) == std::vector<std::string>{"high:0", "high-2:0"});
    }
    SECTION("the find shows the priority") { CHECK(f.store.find("low:0")->priority == 10); }
}

TEST_CASE("plain SQL may set a priority within its bounds only", "[pg][store][controls]") {
    test::StoreFixture f;
    f.db.exec(
        "INSERT INTO outbox (workflow_id, ordinal, activity_type, priority)"
        " VALUES ('sql', 0, 'a', 100)");
    CHECK(f.store.find("sql:0")->priority == 100);
    CHECK_THROWS(
        f.db.exec("INSERT INTO outbox (workflow_id, ordinal, activity_type, priority)"
                  " VALUES ('sql', 1, 'a', 101)"));
    CHECK_THROWS(
        f.db.exec("INSERT INTO outbox (workflow_id, ordinal, activity_type, priority)"
                  " VALUES ('sql', 2, 'a', -1)"));
}

TEST_CASE("an ordered claim takes a workflow's rows one at a time, in order",
          "[pg][store][controls]") {
    test::StoreFixture f;
    // Staged out of order: (ordinal, id) decides, not the staging order.
    f.store.append(
        std::vector{new_row("w", 2), new_row("w", 0), new_row("w", 1), new_row("other", 0)});
    auto& claims = f.store.claims;

    auto first = claims.claim_controlled(f.owner, ClaimScope{}, 10, std::nullopt, ordered());
    REQUIRE(first.rows.size() == 2);
    CHECK(keys(first.rows) == std::vector<std::string>{"w:0", "other:0"});
    // The rows behind w:0 wait: out of the claimable index.
    CHECK(f.store.find("w:1")->waiting);
    CHECK(f.store.find("w:2")->waiting);
    CHECK(claims.claim_controlled(f.owner, ClaimScope{}, 10, std::nullopt, ordered()).rows.empty());

    SECTION("a retry keeps the order: the later rows wait through its backoff") {
        REQUIRE(f.store.record_outcomes(
            std::vector{Outcome::retry(ref_of(first.rows[0]), 200ms, "flaky")})[0]);
        CHECK(claims.claim_controlled(f.owner, ClaimScope{}, 10, std::nullopt, ordered())
                  .rows.empty());
        // Its backoff passes (the row's own instant moves back, by the database's clock).
        CHECK(f.count("dispatch_key = 'w:0' AND visible_after > now() + interval '100 ms'") == 1);
        f.db.exec(
            "UPDATE outbox SET visible_after = visible_after - interval '300 ms'"
            " WHERE dispatch_key = 'w:0'");
        const auto again =
            claims.claim_controlled(f.owner, ClaimScope{}, 10, std::nullopt, ordered());
        CHECK(keys(again.rows) == std::vector<std::string>{"w:0"});
    }
    SECTION("done lets the next row go, and only it") {
        REQUIRE(f.store.record_outcomes(
            std::vector{ending(Outcome::done(ref_of(first.rows[0])), first.rows[0])})[0]);
        CHECK_FALSE(f.store.find("w:1")->waiting);
        CHECK(f.store.find("w:2")->waiting);
        const auto next =
            claims.claim_controlled(f.owner, ClaimScope{}, 10, std::nullopt, ordered());
        CHECK(keys(next.rows) == std::vector<std::string>{"w:1"});
    }
    SECTION("a row let go too early waits again") {
        // An outcome that names the workflow but was fenced (a stale token) lets w:1 go;
        // the claim finds w:0 still claimed and parks it again.
        const auto stale = f.store.record_outcomes(std::vector{ending(
            Outcome::done({first.rows[0].id, first.rows[0].claim_token + 1000}), first.rows[0])});
        CHECK_FALSE(stale[0]);
        CHECK_FALSE(f.store.find("w:1")->waiting);
        CHECK(claims.claim_controlled(f.owner, ClaimScope{}, 10, std::nullopt, ordered())
                  .rows.empty());
        CHECK(f.store.find("w:1")->waiting);
    }
}

TEST_CASE("a dead letter blocks its workflow, or with skip lets the next row go",
          "[pg][store][controls]") {
    test::StoreFixture f;
    f.store.append(std::vector{new_row("w", 0), new_row("w", 1), new_row("w", 2)});
    auto& claims = f.store.claims;
    const bool block = GENERATE(true, false);
    auto first = claims.claim_controlled(f.owner, ClaimScope{}, 10, std::nullopt, ordered(block));
    REQUIRE(keys(first.rows) == std::vector<std::string>{"w:0"});
    REQUIRE(f.store.record_outcomes(
        std::vector{ending(Outcome::fail(ref_of(first.rows[0]), "bad input"), first.rows[0])})[0]);
    REQUIRE(f.status_of("w:0") == Status::failed);

    const auto next =
        claims.claim_controlled(f.owner, ClaimScope{}, 10, std::nullopt, ordered(block));
    if (block) {
        INFO("block");
        CHECK(next.rows.empty());
        CHECK(f.store.find("w:1")->waiting);
        CHECK(f.store.maintenance.count_blocked_workflows(store::ShardRanges::all(), {"default"})
                  .at("default") == 1);
        // The API's view: the workflow's rows in order, the waiting one marked.
        const auto rows = f.store.admin.workflow_rows("w", 100);
        REQUIRE(rows.size() == 3);
        CHECK(rows[0].status == Status::failed);
        CHECK(rows[1].waiting);
        // Requeued, the dead letter goes first again; its end lets w:1 go.
        REQUIRE(f.store.requeue_dead_letter("w:0"));
        const auto requeued =
            claims.claim_controlled(f.owner, ClaimScope{}, 10, std::nullopt, ordered(block));
        REQUIRE(keys(requeued.rows) == std::vector<std::string>{"w:0"});
        REQUIRE(f.store.record_outcomes(
            std::vector{ending(Outcome::done(ref_of(requeued.rows[0])), requeued.rows[0])})[0]);
        CHECK(keys(claims.claim_controlled(f.owner, ClaimScope{}, 10, std::nullopt, ordered(block))
                       .rows) == std::vector<std::string>{"w:1"});
        CHECK(f.store.maintenance.count_blocked_workflows(store::ShardRanges::all(), {"default"})
                  .empty());
    } else {
        INFO("skip");
        CHECK(keys(next.rows) == std::vector<std::string>{"w:1"});
    }
}

TEST_CASE("a cancelled workflow no longer blocks: its waiting rows are settled",
          "[pg][store][controls]") {
    test::StoreFixture f;
    f.store.append(std::vector{new_row("w", 0), new_row("w", 1)});
    auto first =
        f.store.claims.claim_controlled(f.owner, ClaimScope{}, 10, std::nullopt, ordered());
    REQUIRE(first.rows.size() == 1);
    REQUIRE(f.store.find("w:1")->waiting);
    CHECK(f.store.cancel_workflow("w").size() == 2);
    CHECK(f.status_of("w:1") == Status::cancelled);
}

TEST_CASE("the backstop lets go a row parked while its predecessor's outcome was written",
          "[pg][store][controls]") {
    test::StoreFixture f;
    f.store.append(std::vector{new_row("w", 0), new_row("w", 1), new_row("v", 0), new_row("v", 1)});
    auto first =
        f.store.claims.claim_controlled(f.owner, ClaimScope{}, 10, std::nullopt, ordered());
    REQUIRE(first.rows.size() == 2);
    // Both ended without letting their next rows go (the race the backstop is for), w's
    // done, v's dead-lettered.
    f.db.exec(
        "UPDATE outbox SET status = 'done', finished_at = now(), claimed_at = NULL,"
        " claimed_by = NULL, claim_token = NULL WHERE dispatch_key = 'w:0'");
    f.db.exec(
        "UPDATE outbox SET status = 'failed', finished_at = now(), claimed_at = NULL,"
        " claimed_by = NULL, claim_token = NULL WHERE dispatch_key = 'v:0'");
    const auto all = store::ShardRanges::all();
    // v's namespace blocks on dead letters: only w:1 goes.
    CHECK(f.store.maintenance.let_go_waiting(all, {"default"}, {}, 100) == 1);
    CHECK_FALSE(f.store.find("w:1")->waiting);
    CHECK(f.store.find("v:1")->waiting);
    // With skip, v:1 goes too.
    CHECK(f.store.maintenance.let_go_waiting(all, {"default"}, {"default"}, 100) == 1);
    CHECK_FALSE(f.store.find("v:1")->waiting);
    // No ordered namespace: nothing to look at.
    CHECK(f.store.maintenance.let_go_waiting(all, {}, {}, 100) == 0);
}

TEST_CASE("waiting rows of a namespace no longer ordered are let go", "[pg][store][controls]") {
    test::StoreFixture f;
    f.store.append(std::vector{new_row("w", 0), new_row("w", 1), new_row("w", 2),
                               new_row("k", 0, "kept"), new_row("k", 1, "kept")});
    auto& claims = f.store.claims;
    REQUIRE(
        claims.claim_controlled(f.owner, ClaimScope{}, 10, std::nullopt, ordered()).rows.size() ==
        1);
    REQUIRE(claims
                .claim_controlled(f.owner, ClaimScope{"kept", "default", std::nullopt, {}}, 10,
                                  std::nullopt, ordered())
                .rows.size() == 1);
    REQUIRE(f.count("waiting") == 3);
    const auto all = store::ShardRanges::all();
    CHECK(f.store.maintenance.release_unordered(all, {"kept"}, 100) == 2);
    CHECK(f.count("waiting") == 1);
    CHECK(f.store.find("k:1")->waiting);
}

TEST_CASE("a concurrency limit holds exactly across claimers of different shards",
          "[pg][store][controls]") {
    test::StoreFixture f;
    // Rows on every shard; two claimers, each owning half of them.
    f.db.exec(
        "INSERT INTO outbox (workflow_id, ordinal, activity_type)"
        " SELECT 'w-' || i, 0, 'charge' FROM generate_series(1, 2000) i");
    const store::Owner a{"node-a/boot-1", store::ShardRanges::balanced_slice(0, 2)};
    const store::Owner b{"node-b/boot-1", store::ShardRanges::balanced_slice(1, 2)};
    f.db.exec("UPDATE shard_leases SET owner = NULL");
    f.db.lease(a.incarnation, a.ranges);
    f.db.lease(b.incarnation, b.ranges);
    ClaimStore::ClaimControls limit;
    limit.activity_type = "charge";
    limit.max_in_flight = 5;
    const ClaimScope scope{"default", "default", std::nullopt, {"charge"}};

    std::atomic<std::int64_t> max_seen{0};
    std::atomic<std::int64_t> done{0};
    std::atomic<bool> stop{false};
    std::thread checker([&] {
        auto conn = f.db.connect();
        while (!stop) {
            pqxx::nontransaction tx{conn};
            const auto n = tx.exec1(
                                 "SELECT count(*) FROM outbox WHERE status = 'claimed'"
                                 " AND activity_type = 'charge'")[0]
                               .as<std::int64_t>();
            max_seen = std::max(max_seen.load(), n);
        }
    });
    const auto claimer = [&](const store::Owner& owner) {
        test::TestStore store{f.db.url()};
        std::vector<Outcome> answers;
        for (int round = 0; round < 150; ++round) {
            const auto claimed =
                store.claims.claim_controlled(owner, scope, 10, std::nullopt, limit);
            CHECK(claimed.rows.size() <= 5);
            // What it saw: no room left under the limit (a fact; the wait is the claim
            // path's to judge).
            if (claimed.rows.empty()) {
                REQUIRE(claimed.limits.type_room.has_value());
                CHECK(*claimed.limits.type_room <= 0);
            }
            answers.clear();
            for (const auto& row : claimed.rows) answers.push_back(Outcome::done(ref_of(row)));
            store.record_outcomes(answers);
            done += static_cast<std::int64_t>(answers.size());
        }
    };
    std::thread ta(claimer, a);
    std::thread tb(claimer, b);
    ta.join();
    tb.join();
    stop = true;
    checker.join();
    INFO("rows done " << done.load());
    CHECK(done > 100);
    CHECK(max_seen <= 5);
    CHECK(max_seen >= 1);

    // Without answers the limit is reached exactly, whichever claimer gets there first.
    f.db.exec(
        "UPDATE outbox SET status = 'pending', claimed_at = NULL, claimed_by = NULL,"
        " claim_token = NULL, finished_at = NULL");
    std::atomic<std::size_t> claimed_total{0};
    const auto grab = [&](const store::Owner& owner) {
        test::TestStore store{f.db.url()};
        for (int i = 0; i < 5; ++i) {
            claimed_total +=
                store.claims.claim_controlled(owner, scope, 3, std::nullopt, limit).rows.size();
        }
    };
    std::thread ga(grab, a);
    std::thread gb(grab, b);
    ga.join();
    gb.join();
    CHECK(claimed_total == 5);
    CHECK(f.count("status = 'claimed'") == 5);
}

TEST_CASE("a rate limit hands out its burst, then tokens as they refill", "[pg][store][controls]") {
    test::StoreFixture f;
    f.db.exec(
        "INSERT INTO outbox (workflow_id, ordinal, activity_type)"
        " SELECT 'w-' || i, 0, 'mail' FROM generate_series(1, 500) i");
    ClaimStore::ClaimControls limit;
    limit.namespace_rate = store::RateLimit{20, 5};
    auto& claims = f.store.claims;
    // Another claimer, connected (and its statements prepared) before the clock starts, so
    // that its first claim below comes right after the loop's last one.
    test::TestStore other{f.db.url()};
    ClaimScope elsewhere;
    elsewhere.namespace_name = "elsewhere";
    (void)other.claims.claim_controlled(f.owner, elsewhere, 1, std::nullopt, limit);

    const auto started = std::chrono::steady_clock::now();
    const auto burst = claims.claim_controlled(f.owner, ClaimScope{}, 100, std::nullopt, limit);
    CHECK(burst.rows.size() == 5);
    const auto empty = claims.claim_controlled(f.owner, ClaimScope{}, 100, std::nullopt, limit);
    CHECK(empty.rows.size() <= 1);
    if (empty.rows.empty()) {
        // What it saw: the bucket it read held less than a whole token.
        REQUIRE(empty.limits.buckets.size() == 1);
        CHECK(empty.limits.buckets[0].tokens < 1);
        const auto verdict = dispatch::ClaimLimits::judge(empty.limits, 0);
        REQUIRE(verdict.wait.has_value());
        CHECK(*verdict.wait <= 60ms);  // one token at 20 a second
    }
    // Claiming as fast as it may for a second: the rate, not the claims, decides.
    std::size_t taken = burst.rows.size() + empty.rows.size();
    // The last claim's start: the tokens it could take were refilled by then, whatever its
    // statement's latency on a loaded machine.
    auto last_claim = started;
    while (std::chrono::steady_clock::now() - started < 1s) {
        last_claim = std::chrono::steady_clock::now();
        const auto got = claims.claim_controlled(f.owner, ClaimScope{}, 100, std::nullopt, limit);
        taken += got.rows.size();
        // Paced as the claim path paces it.
        const auto verdict = dispatch::ClaimLimits::judge(got.limits, got.rows.size());
        if (verdict.wait) std::this_thread::sleep_for(*verdict.wait);
    }
    const double elapsed =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    const double refilled = std::chrono::duration<double>(last_claim - started).count();
    INFO("taken " << taken << " in " << elapsed << " s, the last claim at " << refilled << " s");
    CHECK(static_cast<double>(taken) <= 20 * elapsed + 5 + 1);
    CHECK(static_cast<double>(taken) >= 20 * refilled + 5 - 3);
    // The bucket is the cluster's: another claimer's first claim finds it spent (what
    // refilled since the last claim at most, a token every 50 ms).
    const auto asked = std::chrono::steady_clock::now();
    const auto found =
        other.claims.claim_controlled(f.owner, ClaimScope{}, 100, std::nullopt, limit).rows.size();
    const double since = std::chrono::duration<double>(asked - last_claim).count();
    INFO("the other claimer asked " << since << " s after the last claim");
    CHECK(static_cast<double>(found) <= 1 + 20 * since);
    CHECK(found < 5);  // never a fresh bucket's burst
}

TEST_CASE("only ordered claims enter the workflow-order index; they still hold their workflow",
          "[pg][store][controls]") {
    test::StoreFixture f;
    f.store.append(std::vector{new_row("u", 0), new_row("u", 1)});
    // A plain claim marks nothing: its rows write no entry into the workflow-order index.
    const auto plain = f.store.claim(f.owner, 1);
    REQUIRE(plain.size() == 1);
    CHECK(f.count("status = 'claimed' AND holds_order") == 0);
    CHECK(f.store.complete({plain[0].id, plain[0].claim_token}));
    CHECK(f.store.complete({f.store.claim(f.owner, 1).at(0).id, f.store.find("u:1")->claim_token}));

    // An ordered claim marks its row, and the head check finds it there: the next row of its
    // workflow waits while it is claimed, whichever claim comes next.
    f.store.append(std::vector{new_row("o", 0), new_row("o", 1)});
    auto& claims = f.store.claims;
    const auto first = claims.claim_controlled(f.owner, ClaimScope{}, 1, std::nullopt, ordered());
    REQUIRE(keys(first.rows) == std::vector<std::string>{"o:0"});
    CHECK(f.count("status = 'claimed' AND holds_order") == 1);
    CHECK(claims.claim_controlled(f.owner, ClaimScope{}, 10, std::nullopt, ordered()).rows.empty());
    CHECK(f.store.find("o:1")->waiting);
    // The index is the one the head check reads (whatever the statistics of a table this
    // small say: sequential scans priced out).
    std::string text;
    {
        pqxx::connection conn{f.db.url()};
        pqxx::nontransaction tx{conn};
        tx.exec("SET enable_seqscan = off");
        for (const auto& row :
             tx.exec("EXPLAIN SELECT 1 FROM outbox p WHERE p.workflow_id = 'o' AND (p.status IN "
                     "('pending', 'failed') OR (p.status = 'claimed' AND p.holds_order)) AND "
                     "(p.ordinal, p.id) < (1, 99)"))
            text += row[0].as<std::string>() + "\n";
    }
    INFO(text);
    CHECK(text.find("outbox_workflow_order_idx") != std::string::npos);

    // A cancel finds the workflow's claimed rows without them: an index for every part of it
    // (with sequential scans priced out, a part no index serves would still show one).
    std::string cancel;
    {
        pqxx::connection conn{f.db.url()};
        pqxx::nontransaction tx{conn};
        tx.exec("SET enable_seqscan = off");
        tx.exec("PREPARE cancel_plan(text) AS " + std::string{store::sql::kCancelWorkflow.sql});
        for (const auto& row : tx.exec("EXPLAIN EXECUTE cancel_plan('o')"))
            cancel += row[0].as<std::string>() + "\n";
    }
    INFO(cancel);
    CHECK(cancel.find("Seq Scan on outbox") == std::string::npos);
    CHECK(f.store.cancel_workflow("o") == std::vector<std::string>{"o:0", "o:1"});
}

TEST_CASE("a scope of any type but some leaves those out, scoped and ordered, from any position",
          "[pg][store][controls]") {
    test::StoreFixture f;
    std::vector<store::NewRow> rows;
    for (const auto* type : {"charge", "email", "refund", "email", "charge"}) {
        auto row = new_row(std::string{type} + "-" + std::to_string(rows.size()), 0);
        row.activity_type = type;
        rows.push_back(row);
    }
    f.store.append(rows);
    auto& claims = f.store.claims;
    ClaimScope any_but_email;  // no activity types: any, but email
    any_but_email.excluded_types = {"email"};
    const auto types_of = [](const std::vector<OutboxRow>& claimed) {
        std::vector<std::string> out;
        for (const auto& row : claimed) out.push_back(row.activity_type);
        return out;
    };

    SECTION("scoped: from the front, then after a position") {
        const auto first = claims.claim_scoped(f.owner, any_but_email, 2);
        CHECK(types_of(first) == std::vector<std::string>{"charge", "refund"});
        const store::ClaimPosition after{first.back().visible_after, first.back().id};
        const auto next = claims.claim_scoped(f.owner, any_but_email, 10, after);
        CHECK(types_of(next) == std::vector<std::string>{"charge"});
        CHECK(claims.claim_scoped(f.owner, any_but_email, 10).empty());
    }
    SECTION("ordered, and through claim_controlled") {
        const auto claimed =
            claims.claim_controlled(f.owner, any_but_email, 10, std::nullopt, ordered());
        CHECK(types_of(claimed.rows) == std::vector<std::string>{"charge", "refund", "charge"});
    }
    SECTION("the left-out types stay for a scope that names them") {
        (void)claims.claim_scoped(f.owner, any_but_email, 10);
        ClaimScope email;
        email.activity_types = {"email"};
        CHECK(types_of(claims.claim_scoped(f.owner, email, 10)) ==
              std::vector<std::string>{"email", "email"});
    }
    // The same predicate in memory.
    OutboxRow row;
    row.namespace_name = row.task_queue = "default";
    row.activity_type = "email";
    CHECK_FALSE(any_but_email.admits(row));
    row.activity_type = "refund";
    CHECK(any_but_email.admits(row));
}

}  // namespace outboxd
