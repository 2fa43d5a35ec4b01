// Outcomes, fenced by the claim; reconciliation of stale and orphaned claims; cancel.

#include <algorithm>
#include <set>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "outboxd/store/cluster_store.hpp"
#include "outboxd/store/store_error.hpp"
#include "store_fixture.hpp"

using namespace outboxd;
using namespace std::chrono_literals;
using store::ClaimRef;
using store::Outcome;
using store::ShardRanges;
using store::Status;
using test::new_row;

namespace {

ClaimRef ref_of(const store::OutboxRow& row) { return {row.id, row.claim_token}; }

store::OutboxRow claim_one(test::StoreFixture& f) {
    const auto rows = f.store.claim(f.owner, 1);
    if (rows.size() != 1) throw std::runtime_error("expected one claimable row");
    return rows.front();
}

// Seconds between the row's visible_after and the database's now().
double visible_in_seconds(test::StoreFixture& f, const std::string& key) {
    return f.db
        .exec(
            "SELECT extract(epoch FROM visible_after - now()) FROM outbox WHERE dispatch_key = '" +
            key + "'")[0][0]
        .as<double>();
}

}  // namespace

TEST_CASE("complete marks a claimed row done and nothing is claimable after", "[pg][store]") {
    test::StoreFixture f;
    f.store.append(std::vector{new_row("wf", 0), new_row("wf", 1)});
    for (const auto& row : f.store.claim(f.owner, 10)) CHECK(f.store.complete(ref_of(row)));
    const auto done = f.store.find("wf:0");
    REQUIRE(done);
    CHECK(done->status == Status::done);
    CHECK(done->attempt == 0);
    CHECK(done->finished_at);
    CHECK_FALSE(done->claimed_at);
    CHECK_FALSE(done->claimed_by);
    CHECK(f.status_of("wf:1") == Status::done);
    CHECK(f.store.claim(f.owner, 10).empty());
}

TEST_CASE("retry returns the row to pending, bumps the attempt and fences visibility",
          "[pg][store]") {
    test::StoreFixture f;
    f.store.append(std::vector{new_row("wf", 0)});
    const auto row = claim_one(f);
    CHECK(f.store.retry(ref_of(row), 2000ms, "worker said no"));
    const auto state = f.store.find("wf:0");
    REQUIRE(state);
    CHECK(state->status == Status::pending);
    CHECK(state->attempt == 1);
    CHECK(state->last_error == "worker said no");
    CHECK_FALSE(state->claimed_at);
    CHECK_FALSE(state->finished_at);
    const double fence = visible_in_seconds(f, "wf:0");
    CHECK(fence > 1.5);
    CHECK(fence <= 2.0);
    CHECK(f.store.claim(f.owner, 10).empty());  // the fence holds it back
}

TEST_CASE("a zero-delay retry re-arms for immediate re-claim and still consumes an attempt",
          "[pg][store]") {
    test::StoreFixture f;
    f.store.append(std::vector{new_row("wf", 0)});
    const auto row = claim_one(f);
    CHECK(f.store.retry(ref_of(row), 0ms, "connection lost"));
    CHECK(visible_in_seconds(f, "wf:0") <= 0.0);
    const auto again = f.store.claim(f.owner, 10);
    REQUIRE(again.size() == 1);
    CHECK(again[0].attempt == 1);
}

TEST_CASE("fail dead-letters the row with its error and it is never claimed again", "[pg][store]") {
    test::StoreFixture f;
    auto row = new_row("wf", 0);
    row.attempt = 2;
    f.store.append(std::vector{row});
    const auto claimed = claim_one(f);
    CHECK(claimed.attempt == 2);
    CHECK(f.store.fail(ref_of(claimed), "card declined"));
    const auto state = f.store.find("wf:0");
    REQUIRE(state);
    CHECK(state->status == Status::failed);
    CHECK(state->attempt == 3);
    CHECK(state->last_error == "card declined");
    CHECK(state->finished_at);
    CHECK(f.store.claim(f.owner, 10).empty());

    const auto letters = f.store.list_dead_letters(std::nullopt, 10);
    REQUIRE(letters.size() == 1);
    CHECK(letters[0].dispatch_key == "wf:0");
    CHECK(letters[0].last_error == "card declined");
    CHECK(letters[0].attempt == 3);
    CHECK(f.store.list_dead_letters(std::string_view{"other"}, 10).empty());
    CHECK(f.store.list_dead_letters(std::string_view{"default"}, 10).size() == 1);
}

TEST_CASE("a requeued dead letter is pending again with a fresh budget", "[pg][store]") {
    test::StoreFixture f;
    f.store.append(std::vector{new_row("wf", 0)});
    CHECK_FALSE(f.store.requeue_dead_letter("wf:0"));  // pending, not a dead letter
    f.store.fail(ref_of(claim_one(f)), "boom");
    CHECK(f.store.requeue_dead_letter("wf:0"));
    CHECK_FALSE(f.store.requeue_dead_letter("wf:0"));
    CHECK_FALSE(f.store.requeue_dead_letter("missing"));
    const auto again = claim_one(f);
    CHECK(again.attempt == 0);
    CHECK(f.store.complete(ref_of(again)));
    CHECK(f.store.list_dead_letters(std::nullopt, 10).empty());
}

TEST_CASE("outcomes apply only to the claim they answer", "[pg][store]") {
    test::StoreFixture f;
    f.store.append(std::vector{new_row("wf", 0)});
    const auto first = claim_one(f);
    CHECK_FALSE(f.store.complete({first.id, first.claim_token + 1000}));  // wrong token
    CHECK_FALSE(f.store.complete({first.id + 1000, first.claim_token}));  // no such row

    // Re-armed and claimed again: the first claim's answers change nothing.
    f.age_claim("wf:0", 60'000);
    REQUIRE(f.store.rearm_stale_claimed(f.owner, 30s, 10).size() == 1);
    CHECK_FALSE(f.store.complete(ref_of(first)));
    const auto second = claim_one(f);
    CHECK(second.claim_token != first.claim_token);
    CHECK_FALSE(f.store.fail(ref_of(first), "late"));
    CHECK_FALSE(f.store.retry(ref_of(first), 0ms, "late"));
    CHECK(f.status_of("wf:0") == Status::claimed);
    CHECK(f.store.complete(ref_of(second)));
    CHECK_FALSE(f.store.complete(ref_of(second)));  // a repeated answer changes nothing
    CHECK(f.status_of("wf:0") == Status::done);
}

TEST_CASE("a batch of outcomes is written in one statement, each fenced", "[pg][store]") {
    test::StoreFixture f;
    std::vector<store::NewRow> rows;
    for (int i = 0; i < 5; ++i) rows.push_back(new_row("wf", i));
    f.store.append(rows);
    auto claimed = f.store.claim(f.owner, 10);
    REQUIRE(claimed.size() == 5);
    const std::vector outcomes{
        Outcome::done(ref_of(claimed[0])),
        Outcome::retry(ref_of(claimed[1]), 60s, "later"),
        Outcome::fail(ref_of(claimed[2]), "never"),
        Outcome::done({claimed[3].id, claimed[3].claim_token + 1}),  // stale
        Outcome::fail(ref_of(claimed[0]), "duplicate answer"),
        Outcome::release(ref_of(claimed[4])),
    };
    CHECK(f.store.record_outcomes(outcomes) == std::vector{true, true, true, false, false, true});
    CHECK(f.status_of(claimed[0].dispatch_key) == Status::done);
    CHECK(f.status_of(claimed[1].dispatch_key) == Status::pending);
    CHECK(f.status_of(claimed[2].dispatch_key) == Status::failed);
    CHECK(f.status_of(claimed[3].dispatch_key) == Status::claimed);
    // A released row never reached a worker: no attempt consumed, claimable at once.
    const auto released = f.store.claim(f.owner, 10);
    REQUIRE(released.size() == 1);
    CHECK(released[0].dispatch_key == claimed[4].dispatch_key);
    CHECK(released[0].attempt == 0);
    CHECK(f.store.record_outcomes({}).empty());
}

TEST_CASE("stale claims are listed read-only and re-armed with the attempt preserved",
          "[pg][store]") {
    test::StoreFixture f;
    auto row = new_row("wf", 0);
    row.attempt = 2;
    f.store.append(std::vector{row, new_row("wf", 1), new_row("wf", 2), new_row("wf", 3)});
    const auto claimed = f.store.claim(f.owner, 10);
    REQUIRE(claimed.size() == 4);
    f.age_claim("wf:0", 120'000);
    f.age_claim("wf:1", 90'000);
    f.age_claim("wf:3", 90'000);
    // wf:3 finishes: terminal rows are never touched.
    for (const auto& r : claimed) {
        if (r.dispatch_key == "wf:3") CHECK(f.store.complete(ref_of(r)));
    }

    const auto stale = f.store.list_stale_claimed(ShardRanges::all(), 60s, 10);
    REQUIRE(stale.size() == 2);
    CHECK(stale[0].dispatch_key == "wf:0");  // oldest claim first
    CHECK(stale[1].dispatch_key == "wf:1");
    CHECK(f.count("status = 'claimed'") == 3);  // read-only
    CHECK(f.store.list_stale_claimed(ShardRanges::all(), 60s, 1).size() == 1);
    CHECK(f.store.list_stale_claimed(ShardRanges::none(), 60s, 10).empty());

    const auto rearmed = f.store.rearm_stale_claimed(f.owner, 60s, 10);
    REQUIRE(rearmed.size() == 2);
    const auto first = f.store.find("wf:0");
    REQUIRE(first);
    CHECK(first->status == Status::pending);
    CHECK(first->attempt == 2);
    CHECK_FALSE(first->claimed_at);
    CHECK_FALSE(first->claimed_by);
    CHECK(visible_in_seconds(f, "wf:0") <= 0.0);
    CHECK(f.status_of("wf:2") == Status::claimed);  // young claim untouched
    CHECK(f.status_of("wf:3") == Status::done);

    // Re-arming needs the lease, like a claim.
    f.age_claim("wf:2", 120'000);
    CHECK(f.store.rearm_stale_claimed({"node-z/boot", ShardRanges::all()}, 60s, 10).empty());
}

TEST_CASE("claims of incarnations without a live heartbeat are re-armed at once", "[pg][store]") {
    test::StoreFixture f;
    store::ClusterStore cluster{f.db.url()};
    cluster.register_node("node-a", f.owner.incarnation, "ws://a/v1/workers");
    cluster.register_node("node-b", "node-b/boot-1", "ws://b/v1/workers");
    f.store.append(std::vector{new_row("wf", 0), new_row("wf", 1), new_row("wf", 2)});
    auto claimed = f.store.claim(f.owner, 10);
    REQUIRE(claimed.size() == 3);
    // wf:0 was claimed by node-b (alive), wf:1 by node-c (dead), wf:2 by us.
    f.db.exec("UPDATE outbox SET claimed_by = 'node-b/boot-1' WHERE dispatch_key = 'wf:0'");
    f.db.exec("UPDATE outbox SET claimed_by = 'node-c/boot-7' WHERE dispatch_key = 'wf:1'");

    const auto rearmed = f.store.rearm_orphaned(f.owner, 5s, 100);
    REQUIRE(rearmed.size() == 1);
    CHECK(rearmed[0].dispatch_key == "wf:1");
    CHECK(f.status_of("wf:1") == Status::pending);
    CHECK(f.status_of("wf:0") == Status::claimed);
    CHECK(f.status_of("wf:2") == Status::claimed);

    // node-b's heartbeat goes stale: its claim is orphaned too.
    f.db.exec(
        "UPDATE dispatcher_nodes SET heartbeat_at = now() - interval '1 minute' "
        "WHERE node_id = 'node-b'");
    CHECK(f.store.rearm_orphaned(f.owner, 5s, 100).size() == 1);
    CHECK(f.status_of("wf:0") == Status::pending);
    CHECK(f.status_of("wf:2") == Status::claimed);
}

TEST_CASE("cancel settles a workflow's live rows and returns their keys", "[pg][store]") {
    test::StoreFixture f;
    f.store.append(
        std::vector{new_row("wf", 0), new_row("wf", 1), new_row("wf", 2), new_row("other", 0)});
    const auto claimed = f.store.claim_scoped(f.owner, {}, 1);  // wf:0 or similar
    REQUIRE(claimed.size() == 1);
    // Finish one row of wf first, so cancel meets a terminal row too.
    const auto more = f.store.claim(f.owner, 10);
    for (const auto& r : more) {
        if (r.dispatch_key == "wf:2") CHECK(f.store.complete(ref_of(r)));
    }
    std::vector<std::string> unsettled = f.store.list_unsettled_workflow_ids(ShardRanges::all());
    CHECK(unsettled == std::vector<std::string>{"other", "wf"});

    const auto keys = f.store.cancel_workflow("wf");
    CHECK(keys == std::vector<std::string>{"wf:0", "wf:1"});
    CHECK(f.status_of("wf:0") == Status::cancelled);
    CHECK(f.status_of("wf:1") == Status::cancelled);
    CHECK(f.status_of("wf:2") == Status::done);
    CHECK(f.store.cancel_workflow("wf").empty());  // idempotent
    CHECK(f.store.list_unsettled_workflow_ids(ShardRanges::all()) ==
          std::vector<std::string>{"other"});
    // A late answer for a cancelled row changes nothing.
    for (const auto& r : more) {
        if (r.dispatch_key == "wf:1" || r.dispatch_key == "wf:0") {
            CHECK_FALSE(f.store.complete(ref_of(r)));
        }
    }
    CHECK(f.status_of("wf:1") == Status::cancelled);
    CHECK(f.store.claim(f.owner, 10).empty() == (f.status_of("other:0") != Status::pending));
}

TEST_CASE("counts: in-flight is pending plus claimed, claimed is claimed only", "[pg][store]") {
    test::StoreFixture f;
    std::vector<store::NewRow> rows;
    for (int i = 0; i < 5; ++i) rows.push_back(new_row("a-" + std::to_string(i), 0, "alpha"));
    for (int i = 0; i < 3; ++i) rows.push_back(new_row("b-" + std::to_string(i), 0, "beta"));
    f.store.append(rows);
    const auto alpha = f.store.claim_scoped(f.owner, {"alpha", "default", {}, {}}, 2);
    REQUIRE(alpha.size() == 2);
    CHECK(f.store.complete(ref_of(alpha[0])));  // done rows count nowhere

    const auto all = ShardRanges::all();
    CHECK(f.store.count_inflight("alpha", all) == 4);
    CHECK(f.store.count_claimed("alpha", all) == 1);
    CHECK(f.store.count_inflight("beta", all) == 3);
    CHECK(f.store.count_claimed("beta", all) == 0);
    CHECK(f.store.count_inflight("gamma", all) == 0);

    const std::vector<std::string> wanted{"alpha", "beta", "gamma"};
    const auto by_ns = f.store.count_claimed_by_namespace(wanted, all);
    CHECK(by_ns == std::map<std::string, std::int64_t>{{"alpha", 1}, {"beta", 0}, {"gamma", 0}});
    const std::vector<std::string> only_beta{"beta"};
    CHECK(f.store.count_claimed_by_namespace(only_beta, all).size() == 1);

    const auto live = f.store.count_live_by_namespace(all);
    REQUIRE(live.size() == 2);
    CHECK(live.at("alpha").inflight == 4);
    CHECK(live.at("alpha").claimed == 1);
    CHECK(live.at("beta").inflight == 3);
}

TEST_CASE("pending routes name each route with claimable rows, and only those", "[pg][store]") {
    test::StoreFixture f;
    auto fenced = new_row("wf-f", 0, "fenced", "q");
    fenced.visible_after = store::now() + std::chrono::hours{1};
    f.store.append(std::vector{new_row("wf-1", 0, "alpha", "q1"), new_row("wf-2", 0, "alpha", "q1"),
                               new_row("wf-3", 0, "alpha", "q2", "box-1"),
                               new_row("wf-4", 0, "beta", "q1"), fenced});
    const auto routes = f.store.pending_routes(ShardRanges::all());
    REQUIRE(routes.size() == 3);
    CHECK(routes[0] == store::ClaimScope{"alpha", "q1", std::nullopt, {}});
    CHECK(routes[1] == store::ClaimScope{"alpha", "q2", "box-1", {}});
    CHECK(routes[2] == store::ClaimScope{"beta", "q1", std::nullopt, {}});

    // A route whose rows are all claimed or finished is not listed.
    f.store.claim_scoped(f.owner, {"beta", "q1", {}, {}}, 10);
    CHECK(f.store.pending_routes(ShardRanges::all()).size() == 2);
}

TEST_CASE("retention deletes old done and cancelled rows and keeps dead letters", "[pg][store]") {
    test::StoreFixture f;
    f.store.append(
        std::vector{new_row("wf", 0), new_row("wf", 1), new_row("wf", 2), new_row("wf", 3)});
    const auto claimed = f.store.claim(f.owner, 10);
    REQUIRE(claimed.size() == 4);
    CHECK(f.store.complete(ref_of(claimed[0])));
    CHECK(f.store.fail(ref_of(claimed[1]), "x"));
    CHECK(f.store.complete(ref_of(claimed[2])));
    CHECK(f.store.delete_finished(1h, 100) == 0);  // too young
    f.db.exec(
        "UPDATE outbox SET finished_at = now() - interval '2 hours' WHERE finished_at IS NOT NULL");
    CHECK(f.store.delete_finished(1h, 1) == 1);
    CHECK(f.store.delete_finished(1h, 100) == 1);
    CHECK(f.count("true") == 2);
    CHECK(f.count("status = 'failed'") == 1);
    CHECK(f.count("status = 'claimed'") == 1);
}

TEST_CASE("a cancel is remembered: rows staged later are never claimed and get settled",
          "[pg][store]") {
    test::StoreFixture f;
    f.store.append(std::vector{new_row("wf", 0)});
    CHECK(f.store.cancel_workflow("wf") == std::vector<std::string>{"wf:0"});
    // The application stages more rows for the cancelled workflow.
    f.db.exec(
        "INSERT INTO outbox (workflow_id, ordinal, activity_type) VALUES ('wf', 1, 'charge'), "
        "('other', 0, 'charge')");
    const auto claimed = f.store.claim(f.owner, 10);
    REQUIRE(claimed.size() == 1);
    CHECK(claimed[0].dispatch_key == "other:0");
    CHECK(f.status_of("wf:1") == Status::pending);
    CHECK(f.store.pending_routes(ShardRanges::all()).empty());

    // Settling needs the lease, like any repair on owned shards.
    CHECK(f.store.settle_cancelled({"node-z/boot", ShardRanges::all()}).keys.empty());
    const auto settled = f.store.settle_cancelled(f.owner);
    CHECK(settled.keys == std::vector<std::string>{"wf:1"});
    CHECK(settled.by_namespace.at("default") == 1);
    CHECK(f.status_of("wf:1") == Status::cancelled);
    CHECK(f.store.settle_cancelled(f.owner).keys.empty());
}

TEST_CASE("a done outcome keeps its result; other outcomes leave none", "[pg][store]") {
    test::StoreFixture f;
    f.store.append(std::vector{new_row("wf", 0), new_row("wf", 1), new_row("wf", 2)});
    auto rows = f.store.claim(f.owner, 3);
    REQUIRE(rows.size() == 3);
    std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.id < b.id; });
    const std::vector<Outcome> outcomes{
        Outcome::done(ref_of(rows[0]), std::string{R"({"charged": 5, "ids": [1, 2]})"}),
        Outcome::done(ref_of(rows[1])), Outcome::retry(ref_of(rows[2]), 0ms, "again")};
    CHECK(f.store.record_outcomes(outcomes) == std::vector<bool>{true, true, true});
    const auto kept = f.store.find("wf:0");
    REQUIRE(kept);
    REQUIRE(kept->result_json);
    CHECK(nlohmann::json::parse(*kept->result_json) ==
          nlohmann::json::parse(R"({"charged":5,"ids":[1,2]})"));
    CHECK_FALSE(f.store.find("wf:1")->result_json);  // done without a result
    CHECK_FALSE(f.store.find("wf:2")->result_json);  // retried

    // A result from an attempt that did not end the row never survives a later one.
    const auto again = claim_one(f);
    CHECK(f.store.record_outcomes(std::vector{Outcome::done(ref_of(again), std::string{"7"})})
              .front());
    CHECK(f.store.find("wf:2")->result_json == "7");
}

namespace {

// `count` dead letters of `type` in namespace `ns`, failed with `error`, keys prefix-N.
void dead_letters(test::StoreFixture& f, const std::string& prefix, int count,
                  const std::string& ns, const std::string& type, const std::string& error) {
    f.db.exec(
        "INSERT INTO outbox (dispatch_key, workflow_id, ordinal, activity_type, namespace, "
        "status, attempt, last_error, finished_at) SELECT '" +
        prefix + "-' || g, '" + prefix + "-' || g, 0, '" + type + "', '" + ns +
        "', 'failed', 3, '" + error +
        "', now() - g * interval '1 minute' FROM generate_series(1, " + std::to_string(count) +
        ") g");
}

}  // namespace

TEST_CASE("dead letters are listed page by page through a cursor, by filter", "[pg][store]") {
    test::StoreFixture f;
    dead_letters(f, "a", 25, "billing", "charge", "card declined");
    dead_letters(f, "b", 5, "mail", "email", "mailbox full");
    store::DeadLetterFilter billing;
    billing.namespace_name = "billing";
    std::vector<std::string> seen;
    std::optional<store::DeadLetterCursor> after;
    for (int page = 0; page < 10; ++page) {
        const auto letters = f.store.list_dead_letters(billing, 10, after);
        for (const auto& l : letters) seen.push_back(l.dispatch_key);
        if (letters.size() < 10) break;
        after = store::DeadLetterCursor{*letters.back().failed_at, letters.back().id};
    }
    REQUIRE(seen.size() == 25);
    CHECK(seen.front() == "a-1");  // newest first: a-1 failed a minute ago
    CHECK(seen.back() == "a-25");
    CHECK(std::set<std::string>(seen.begin(), seen.end()).size() == 25);

    store::DeadLetterFilter by_error;
    by_error.error_contains = "mailbox";
    CHECK(f.store.list_dead_letters(by_error, 100, std::nullopt).size() == 5);
    store::DeadLetterFilter by_type;
    by_type.activity_type = "charge";
    by_type.older_than_s = 20 * 60;  // failed 20 minutes ago or earlier: a-20 .. a-25
    CHECK(f.store.list_dead_letters(by_type, 100, std::nullopt).size() == 6);
}

TEST_CASE("bulk requeue and purge take the dead letters a filter names, counted and bounded",
          "[pg][store]") {
    test::StoreFixture f;
    dead_letters(f, "a", 30, "billing", "charge", "card declined");
    dead_letters(f, "b", 5, "billing", "refund", "timeout talking to bank");
    dead_letters(f, "c", 4, "mail", "email", "mailbox full");

    store::DeadLetterFilter declined;
    declined.error_contains = "declined";
    CHECK(f.store.requeue_dead_letters(declined, 20) == 20);  // the limit
    CHECK(f.count("status = 'pending' AND attempt = 0 AND finished_at IS NULL") == 20);
    CHECK(f.store.requeue_dead_letters(declined, 20) == 10);  // the rest
    CHECK(f.store.requeue_dead_letters(declined, 20) == 0);
    // The oldest went first: a-30 .. a-11 in the first call.
    CHECK(f.status_of("a-30") == Status::pending);

    store::DeadLetterFilter refunds;
    refunds.namespace_name = "billing";
    refunds.activity_type = "refund";
    CHECK(f.store.purge_dead_letters(refunds, 100) == 5);
    CHECK(f.count("dispatch_key LIKE 'b-%'") == 0);
    CHECK(f.count("status = 'failed'") == 4);  // mail's, untouched
    // Purge takes only dead letters: the requeued (pending) rows are safe from a broad one.
    CHECK(f.store.purge_dead_letters({}, 100) == 4);
    CHECK(f.count("status = 'pending'") == 30);

    CHECK_THROWS_AS(f.store.requeue_dead_letters({}, 0), store::ValidationError);
    CHECK_THROWS_AS(f.store.purge_dead_letters({}, store::kMaxBulkRows + 1),
                    store::ValidationError);
}

TEST_CASE("cancel and pause markers are forgotten once past retention with no row left to hold",
          "[pg][store]") {
    using namespace std::chrono_literals;
    test::StoreFixture f;
    f.store.append(std::vector{new_row("gone", 0), new_row("held", 0), new_row("fresh", 0),
                               new_row("napping", 0)});
    for (const auto* id : {"gone", "held", "fresh"}) f.store.cancel_workflow(id);
    CHECK(f.store.pause_workflow("napping"));
    CHECK(f.store.pause_workflow("empty"));
    // gone's row is past retention and deleted; held has a dead letter left; fresh was
    // cancelled just now.
    f.db.exec("DELETE FROM outbox WHERE workflow_id = 'gone'");
    f.db.exec(
        "UPDATE outbox SET status = 'failed', finished_at = now() WHERE workflow_id = 'held'");
    f.db.exec(
        "UPDATE cancelled_workflows SET cancelled_at = now() - interval '2 hours'"
        " WHERE workflow_id IN ('gone', 'held')");
    f.db.exec("UPDATE paused_workflows SET paused_at = now() - interval '2 hours'");

    const auto pruned = f.store.maintenance.prune_markers(1h);
    CHECK(pruned.cancels == 1);  // gone
    CHECK(pruned.pauses == 1);   // empty (napping still has a pending row)
    const auto markers = [&](const std::string& table) {
        std::vector<std::string> ids;
        for (const auto& r :
             f.db.exec("SELECT workflow_id FROM " + table + " ORDER BY workflow_id")) {
            ids.push_back(r[0].as<std::string>());
        }
        return ids;
    };
    CHECK(markers("cancelled_workflows") == std::vector<std::string>{"fresh", "held"});
    CHECK(markers("paused_workflows") == std::vector<std::string>{"napping"});

    // A cancel's time moves on with every row it settles: a row staged under an old cancel
    // keeps the marker for another retention.
    f.db.exec("UPDATE cancelled_workflows SET cancelled_at = now() - interval '2 hours'");
    f.store.append(std::vector{new_row("fresh", 1)});
    CHECK(f.store.settle_cancelled(f.owner).keys == std::vector<std::string>{"fresh:1"});
    CHECK(f.store.maintenance.prune_markers(1h).cancels == 0);  // held: a dead letter; fresh: new
    CHECK(markers("cancelled_workflows") == std::vector<std::string>{"fresh", "held"});
    // Once forgotten, a row staged under the id runs.
    f.db.exec("DELETE FROM outbox WHERE workflow_id = 'fresh'");
    f.db.exec(
        "UPDATE cancelled_workflows SET cancelled_at = now() - interval '2 hours'"
        " WHERE workflow_id = 'fresh'");
    CHECK(f.store.maintenance.prune_markers(1h).cancels == 1);
    f.store.append(std::vector{new_row("fresh", 2)});
    CHECK(f.store.settle_cancelled(f.owner).keys.empty());
    CHECK(f.status_of("fresh:2") == Status::pending);
}

TEST_CASE("every claim counts a delivery, whatever its cause; a release takes its claim back",
          "[pg][store]") {
    using namespace std::chrono_literals;
    test::StoreFixture f;
    f.store.append(std::vector{new_row("wf", 0)});
    const auto deliveries = [&] {
        return f.db.exec("SELECT deliveries FROM outbox WHERE dispatch_key = 'wf:0'")[0][0]
            .as<int>();
    };
    CHECK(deliveries() == 0);
    auto claimed = f.store.claim(f.owner, 10);
    REQUIRE(claimed.size() == 1);
    CHECK(claimed[0].deliveries == 1);
    // Let go before it reached anyone: not a delivery.
    REQUIRE(f.store.record_outcomes(std::vector{Outcome::release(ref_of(claimed[0]))}) ==
            std::vector{true});
    CHECK(deliveries() == 0);
    claimed = f.store.claim(f.owner, 10);
    REQUIRE(claimed.size() == 1);
    CHECK(claimed[0].deliveries == 1);
    // A retry: the next delivery is the second, and its attempt the second too.
    REQUIRE(f.store.record_outcomes(std::vector{Outcome::retry(ref_of(claimed[0]), 0ms, "x")}) ==
            std::vector{true});
    claimed = f.store.claim(f.owner, 10);
    REQUIRE(claimed.size() == 1);
    CHECK(claimed[0].deliveries == 2);
    CHECK(claimed[0].attempt == 1);
    // Re-armed because its node died: the attempt stays, the delivery count goes on.
    f.db.exec("UPDATE outbox SET claimed_by = 'node-dead/boot-1'");
    REQUIRE(f.store.rearm_orphaned(f.owner, 5s, 10).size() == 1);
    claimed = f.store.claim(f.owner, 10);
    REQUIRE(claimed.size() == 1);
    CHECK(claimed[0].deliveries == 3);
    CHECK(claimed[0].attempt == 1);
    CHECK(f.store.find("wf:0")->deliveries == 3);
    // A row staged by plain SQL with a count of its own: never below 1, never past the
    // largest int.
    f.db.exec(
        "INSERT INTO outbox (workflow_id, ordinal, activity_type, deliveries)"
        " VALUES ('neg', 0, 'a', -5), ('max', 0, 'a', 2147483647)");
    for (const auto& row : f.store.claim(f.owner, 10)) {
        INFO(row.dispatch_key);
        CHECK(row.deliveries == (row.workflow_id == "neg" ? 1 : 2147483647));
    }
}
