// Keyed backpressure (README, "Tenant controls") against a real PostgreSQL: per-node
// ceilings, CLAIMED-only headroom, per-namespace round robin, the pause hold, and that
// throttling only decides when a row is claimed, never what the row is.
//
// Most cases drive claim_round directly with a fixed route list (workers are never the
// limiter: every route has ample capacity) and the quotas the node would resolve from the
// namespaces table; the last one goes through the dispatcher and its namespace cache.

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include <catch2/catch.hpp>

#include "dispatch_harness.hpp"
#include "outboxd/dispatch/claim_round.hpp"
#include "store_fixture.hpp"

using namespace outboxd;
using namespace std::chrono_literals;
using store::ShardRanges;
using store::Status;
using test::new_row;

namespace {

// The platform default quota when a namespace has no setting (as in the harness).
constexpr std::int64_t kPlatformDefault = 10000;
// Free worker credit per route: far above every ceiling below, so quotas and fairness,
// never worker capacity, decide what is claimed.
constexpr std::int32_t kAmpleCapacity = 1000;

worker::Route route(const std::string& ns, const std::string& task_queue = "default",
                    std::optional<std::string> node = std::nullopt) {
    return {store::ClaimScope{ns, task_queue, std::move(node), {}}, kAmpleCapacity, {}};
}

void set_quota(test::TestStore& store, const std::string& ns, std::int32_t quota) {
    store::NamespaceSettings settings;
    settings.name = ns;
    settings.max_in_flight = quota;
    store.put_namespace(settings);
}

// The quotas of every configured namespace, else the platform default: read once per
// round, as the dispatcher snapshots its namespace cache before submitting a round.
std::function<std::int64_t(const std::string&)> quotas_of(test::TestStore& store) {
    std::map<std::string, std::int64_t> table;
    for (const auto& settings : store.list_namespaces()) {
        if (settings.max_in_flight) table[settings.name] = *settings.max_in_flight;
    }
    return [table](const std::string& ns) {
        const auto it = table.find(ns);
        return it == table.end() ? kPlatformDefault : it->second;
    };
}

dispatch::ClaimRequest request(const store::Owner& owner, const std::vector<worker::Route>& routes,
                               std::function<std::int64_t(const std::string&)> quota,
                               std::int32_t batch_size) {
    dispatch::ClaimRequest r;
    r.owner = owner;
    r.routes = routes;
    r.quota = std::move(quota);
    r.batch_size = batch_size;
    return r;
}

// One sweep's claims, as Dispatcher::sweep runs them. A fresh claimer state each time: these
// cases also claim outside claim_round, which a carried tally may not see (the node never
// does).
std::vector<store::OutboxRow> sweep(test::TestStore& store, const store::Owner& owner,
                                    const std::vector<worker::Route>& routes,
                                    std::int32_t batch_size) {
    dispatch::ClaimerState state{std::chrono::milliseconds{0}};
    return dispatch::claim_round(store.claims, request(owner, routes, quotas_of(store), batch_size),
                                 state)
        .rows;
}

std::vector<store::OutboxRow> sweep(test::StoreFixture& f, const std::vector<worker::Route>& routes,
                                    std::int32_t batch_size) {
    return sweep(f.store, f.owner, routes, batch_size);
}

// `count` rows of `ns`/`task_queue`, one fresh workflow each (`prefix`-0, -1, ...).
std::vector<store::NewRow> rows_of(const std::string& prefix, const std::string& ns, int count,
                                   const std::string& task_queue = "default") {
    std::vector<store::NewRow> rows;
    for (int i = 0; i < count; ++i) {
        rows.push_back(new_row(prefix + "-" + std::to_string(i), 0, ns, task_queue));
    }
    return rows;
}

std::vector<store::NewRow> stage(test::StoreFixture& f, const std::string& prefix,
                                 const std::string& ns, int count,
                                 const std::string& task_queue = "default") {
    auto rows = rows_of(prefix, ns, count, task_queue);
    REQUIRE(f.store.append(rows).staged == rows.size());
    return rows;
}

std::string key_of(const store::NewRow& row) {
    return store::dispatch_key_for(row.workflow_id, row.ordinal);
}

std::int64_t pending_in(test::StoreFixture& f, const std::string& ns) {
    return f.count("namespace = '" + ns + "' AND status = 'pending'");
}

std::size_t count_in(const std::vector<store::OutboxRow>& rows, const std::string& ns) {
    return static_cast<std::size_t>(std::count_if(
        rows.begin(), rows.end(), [&](const auto& row) { return row.namespace_name == ns; }));
}

void complete_all(test::StoreFixture& f, const std::vector<store::OutboxRow>& rows) {
    for (const auto& row : rows) REQUIRE(f.store.complete({row.id, row.claim_token}));
}

std::set<std::string> key_set(const std::vector<store::OutboxRow>& rows) {
    std::set<std::string> keys;
    for (const auto& row : rows) keys.insert(row.dispatch_key);
    return keys;
}

}  // namespace

TEST_CASE("a tenant at its ceiling holds its backlog pending, then resumes as headroom returns",
          "[pg][dispatch][tenant]") {
    test::StoreFixture f;
    set_quota(f.store, "t", 3);
    stage(f, "running", "t", 3);
    const auto executing = f.store.claim(f.owner, 3);  // fills the ceiling
    REQUIRE(executing.size() == 3);
    const auto backlog = stage(f, "backlog", "t", 4);

    // headroom = 3 - 3 claimed = 0: nothing new, sweep after sweep.
    for (int round = 0; round < 3; ++round) CHECK(sweep(f, {route("t")}, 16).empty());
    for (const auto& row : backlog) {
        CHECK(f.status_of(key_of(row)) == Status::pending);  // held: never failed or dropped
        CHECK(f.store.find(key_of(row))->attempt == 0);
    }
    CHECK(f.count("status IN ('done', 'failed', 'cancelled')") == 0);

    // Two executing rows complete: claimed 3 -> 1, headroom 2.
    complete_all(f, {executing[0], executing[1]});
    REQUIRE(f.store.count_claimed("t", ShardRanges::all()) == 1);
    const auto resumed = sweep(f, {route("t")}, 16);
    CHECK(resumed.size() == 2);
    for (const auto& row : resumed) CHECK(row.dispatch_key.starts_with("backlog-"));
    CHECK(pending_in(f, "t") == 2);
    CHECK(f.store.count_claimed("t", ShardRanges::all()) == 3);
    CHECK(sweep(f, {route("t")}, 16).empty());  // at the ceiling again
}

TEST_CASE("the backpressure claim honours the pause hold", "[pg][dispatch][tenant]") {
    test::StoreFixture f;
    set_quota(f.store, "t", 1);
    // The paused workflow's rows are the oldest of the route.
    f.store.append(std::vector{new_row("held", 0, "t"), new_row("held", 1, "t")});
    REQUIRE(f.store.pause_workflow("held"));
    f.store.append(std::vector{new_row("free", 0, "t")});

    // The held rows never take the one slot the ceiling leaves: the younger row gets it.
    const auto first = sweep(f, {route("t")}, 16);
    REQUIRE(first.size() == 1);
    CHECK(first[0].dispatch_key == "free:0");
    complete_all(f, first);

    // Headroom is back and only the hold keeps them pending.
    for (int round = 0; round < 3; ++round) CHECK(sweep(f, {route("t")}, 16).empty());
    CHECK(f.status_of("held:0") == Status::pending);
    CHECK(f.status_of("held:1") == Status::pending);

    // Released: the next sweep claims with no re-arm, still under the ceiling of 1.
    REQUIRE(f.store.resume_workflow("held"));
    const auto released = sweep(f, {route("t")}, 16);
    REQUIRE(released.size() == 1);
    CHECK(released[0].dispatch_key == "held:0");
    CHECK(released[0].attempt == 0);
    CHECK(f.status_of("held:1") == Status::pending);
}

TEST_CASE("a big pending backlog with nothing claimed is not wedged", "[pg][dispatch][tenant]") {
    test::StoreFixture f;
    set_quota(f.store, "t", 5);
    stage(f, "wf", "t", 20);
    REQUIRE(f.store.count_claimed("t", ShardRanges::all()) == 0);
    REQUIRE(f.store.count_inflight("t", ShardRanges::all()) == 20);

    // Headroom counts claimed rows only: 5 - 0 = 5, not 5 - 20.
    CHECK(sweep(f, {route("t")}, 100).size() == 5);
    CHECK(pending_in(f, "t") == 15);
    CHECK(f.store.count_claimed("t", ShardRanges::all()) == 5);
}

TEST_CASE("round robin gives a quiet tenant a slot every sweep", "[pg][dispatch][tenant]") {
    test::StoreFixture f;
    set_quota(f.store, "bursty", 1000);  // generous: fairness, not the ceiling, is tested
    set_quota(f.store, "quiet", 1000);
    stage(f, "burst", "bursty", 500);

    for (int round = 0; round < 3; ++round) {
        INFO("sweep " << round);
        f.store.append(std::vector{new_row("quiet-" + std::to_string(round), 0, "quiet")});
        const auto claimed = sweep(f, {route("bursty"), route("quiet")}, 8);
        CHECK(claimed.size() <= 8);
        CHECK(count_in(claimed, "quiet") == 1);   // no FIFO drain of the bursty tenant first
        CHECK(count_in(claimed, "bursty") >= 1);  // shared, not blocked
        CHECK(pending_in(f, "quiet") == 0);
    }
}

TEST_CASE("a quiet tenant is not starved by a bursty tenant spread over many task queues",
          "[pg][dispatch][tenant]") {
    test::StoreFixture f;
    set_quota(f.store, "bursty", 1000);
    set_quota(f.store, "quiet", 1000);
    std::vector<worker::Route> routes;
    for (int q = 0; q < 8; ++q) {
        const auto queue = "tq-" + std::to_string(q);
        stage(f, "burst-" + queue, "bursty", 500 / 8, queue);
        routes.push_back(route("bursty", queue));
    }
    routes.push_back(route("quiet"));

    // Fairness is per namespace: 8 bursty routes do not get 8 turns to the quiet one's 1.
    for (int round = 0; round < 2; ++round) {
        INFO("sweep " << round);
        f.store.append(std::vector{new_row("quiet-" + std::to_string(round), 0, "quiet")});
        const auto claimed = sweep(f, routes, 8);
        CHECK(count_in(claimed, "quiet") == 1);
        CHECK(count_in(claimed, "bursty") >= 1);
        CHECK(count_in(claimed, "bursty") <= 7);
        CHECK(pending_in(f, "quiet") == 0);
    }
}

TEST_CASE("a throttled claim dispatches each row exactly once", "[pg][dispatch][tenant]") {
    test::StoreFixture f;
    set_quota(f.store, "t", 3);
    const auto staged = stage(f, "wf", "t", 6);

    // Re-staging the same batch is a no-op: throttling can never resurrect a duplicate.
    const auto again = f.store.append(staged);
    CHECK(again.staged == 0);
    CHECK(again.duplicates == 6);
    REQUIRE(f.store.count_inflight("t", ShardRanges::all()) == 6);

    std::vector<std::string> all_claimed;
    for (std::size_t round = 0; round < 10 && all_claimed.size() < 6; ++round) {
        const auto claimed = sweep(f, {route("t")}, 16);
        CHECK(claimed.size() <= 3);    // the ceiling caps each sweep
        CHECK_FALSE(claimed.empty());  // and it never stalls while rows wait
        complete_all(f, claimed);
        for (const auto& row : claimed) all_claimed.push_back(row.dispatch_key);
    }
    std::sort(all_claimed.begin(), all_claimed.end());
    CHECK(std::adjacent_find(all_claimed.begin(), all_claimed.end()) == all_claimed.end());
    std::vector<std::string> expected;
    for (const auto& row : staged) expected.push_back(key_of(row));
    std::sort(expected.begin(), expected.end());
    CHECK(all_claimed == expected);  // every row once: nothing dropped, nothing twice

    CHECK(sweep(f, {route("t")}, 16).empty());
    CHECK(f.count("namespace = 't' AND status = 'done'") == 6);
}

TEST_CASE("a throttled claim preserves each row's identity", "[pg][dispatch][tenant]") {
    // The same logical rows (same workflow ids and ordinals, so the same dispatch keys) on
    // two databases: one claimed unthrottled, one under a ceiling of 1 over many sweeps.
    std::vector<store::NewRow> logical;
    for (int i = 0; i < 4; ++i) {
        auto row = new_row("replay-" + std::to_string(i), i, "t");
        row.input_json = R"({"step":)" + std::to_string(i) + "}";
        logical.push_back(row);
    }
    logical[2].node = "box-1";  // an authored pin must come back as authored

    test::StoreFixture baseline_db;
    baseline_db.store.append(logical);
    const auto baseline = baseline_db.store.claim(baseline_db.owner, 16);
    REQUIRE(baseline.size() == 4);

    test::StoreFixture f;
    set_quota(f.store, "t", 1);
    f.store.append(logical);
    std::vector<store::OutboxRow> throttled;
    for (std::size_t round = 0; round < 10 && throttled.size() < 4; ++round) {
        // A pool labelled box-1 runs unpinned rows and rows pinned to box-1.
        const auto claimed = sweep(f, {route("t", "default", "box-1")}, 16);
        CHECK(claimed.size() <= 1);
        complete_all(f, claimed);
        throttled.insert(throttled.end(), claimed.begin(), claimed.end());
    }
    REQUIRE(throttled.size() == 4);

    using Identity = std::tuple<std::string, std::string, std::int64_t, std::optional<std::string>,
                                std::string, std::string, std::string, std::int32_t, std::int32_t>;
    const auto identities = [](const std::vector<store::OutboxRow>& rows) {
        std::vector<Identity> out;
        for (const auto& r : rows) {
            out.emplace_back(r.dispatch_key, r.workflow_id, r.ordinal, r.node, r.namespace_name,
                             r.activity_type, r.input_json, r.attempt, r.shard);
        }
        std::sort(out.begin(), out.end());
        return out;
    };
    CHECK(identities(throttled) == identities(baseline));
    for (const auto& row : throttled) {
        CHECK(f.store.find(row.dispatch_key)->node ==
              baseline_db.store.find(row.dispatch_key)->node);
    }
}

TEST_CASE("under the default ceiling the claim matches the unscoped claim",
          "[pg][dispatch][tenant]") {
    const auto shared = rows_of("same", "t", 10);  // no tenant setting anywhere

    test::StoreFixture backpressured;
    backpressured.store.append(shared);
    test::StoreFixture plain;
    plain.store.append(shared);
    REQUIRE_FALSE(backpressured.store.get_namespace("t"));

    const auto via_backpressure = sweep(backpressured, {route("t")}, 16);
    const auto via_plain = plain.store.claim(plain.owner, 16);

    std::set<std::string> all;
    for (const auto& row : shared) all.insert(key_of(row));
    CHECK(key_set(via_backpressure) == key_set(via_plain));  // the same rows, key for key
    CHECK(key_set(via_backpressure) == all);
    CHECK(pending_in(backpressured, "t") == 0);
    CHECK(pending_in(plain, "t") == 0);
}

TEST_CASE("the proportional ceiling caps a node that holds part of the shards",
          "[pg][dispatch][tenant]") {
    test::StoreFixture f;
    set_quota(f.store, "t", 8);
    // This node claims on 256 of the 1024 shards: ceil(8 * 256 / 1024) = 2.
    const store::Owner partial{f.owner.incarnation, ShardRanges{{{0, 255}}}};
    REQUIRE(dispatch::per_node_ceiling(8, partial.ranges.count()) == 2);

    // Ten rows on this node's shards and five on other shards.
    const auto ids_where = [&](const std::string& shard_test, int limit) {
        std::vector<store::NewRow> rows;
        const auto found = f.db.exec(
            "SELECT 'p-' || g FROM generate_series(1, 5000) g WHERE outbox_shard('p-' || g) " +
            shard_test + " ORDER BY g LIMIT " + std::to_string(limit));
        for (const auto& id : found) rows.push_back(new_row(id[0].as<std::string>(), 0, "t"));
        REQUIRE(rows.size() == static_cast<std::size_t>(limit));
        return rows;
    };
    const auto mine = ids_where("< 256", 10);
    const auto others = ids_where(">= 256", 5);
    f.store.append(mine);
    f.store.append(others);
    REQUIRE(f.store.count_inflight("t", partial.ranges) == 10);

    const auto claimed = sweep(f.store, partial, {route("t")}, 16);
    CHECK(claimed.size() == 2);
    for (const auto& row : claimed) CHECK(partial.ranges.contains(row.shard));
    CHECK(f.count("namespace = 't' AND status = 'pending' AND shard < 256") == 8);
    for (const auto& row : others) CHECK(f.status_of(key_of(row)) == Status::pending);
    CHECK(sweep(f.store, partial, {route("t")}, 16).empty());  // this node's ceiling is full
}

TEST_CASE("a changed quota takes effect within the namespace cache TTL", "[pg][dispatch][tenant]") {
    test::DispatchHarness h;  // namespace cache TTL: 50 ms
    const auto put_quota = [&](std::int32_t quota) { set_quota(h.store, "t", quota); };
    put_quota(2);
    h.namespaces.start();
    REQUIRE(h.run_until([&] { return h.namespaces.quota("t") == 2; }));

    std::vector<store::NewRow> rows = rows_of("wf", "t", 10);
    h.store.append(rows);
    auto hello = test::DispatchHarness::default_hello(16);
    hello.namespaces = {"t"};
    auto worker = h.connect("s1", hello);
    h.start();
    REQUIRE(h.run_until([&] { return worker->tasks().size() == 2; }));
    h.run_for(200ms);
    CHECK(worker->tasks().size() == 2);  // the worker could take 16
    CHECK(h.store.count_claimed("t", ShardRanges::all()) == 2);

    // Raised: picked up within the TTL (the bound is 20 TTLs, for loaded machines).
    put_quota(5);
    CHECK(h.run_until([&] { return worker->tasks().size() == 5; }, 1s));
    h.run_for(200ms);
    CHECK(worker->tasks().size() == 5);
    CHECK(h.store.count_claimed("t", ShardRanges::all()) == 5);

    // Lowered below what is claimed: nothing new until claimed drops under the new ceiling.
    put_quota(1);
    REQUIRE(h.run_until([&] { return h.namespaces.quota("t") == 1; }, 1s));
    for (const auto& task : worker->tasks()) CHECK(h.complete("s1", task));
    REQUIRE(h.run_until([&] { return worker->tasks().size() == 6; }));
    h.run_for(200ms);
    CHECK(worker->tasks().size() == 6);
    CHECK(h.store.count_claimed("t", ShardRanges::all()) == 1);
    CHECK(h.run_until([&] {
        return h.db.exec("SELECT count(*) FROM outbox WHERE status = 'done'")[0][0].as<int>() == 5;
    }));
}

TEST_CASE("a carried tally skips the count far below the ceiling and counts again where it binds",
          "[pg][dispatch][tenant]") {
    test::StoreFixture f;
    set_quota(f.store, "t", 10);
    stage(f, "row", "t", 40);
    dispatch::ClaimerState state{std::chrono::milliseconds{0}};
    auto& tally = state.tally;
    const auto round = [&](std::int32_t batch) {
        return dispatch::claim_round(
            f.store.claims, request(f.owner, {route("t")}, quotas_of(f.store), batch), state);
    };

    auto first = round(4);  // nothing known yet: counts
    CHECK(first.counted);
    CHECK(first.rows.size() == 4);
    auto second = round(4);  // bound 4, headroom 6 >= 4: trusts the tally
    CHECK_FALSE(second.counted);
    CHECK(second.rows.size() == 4);
    CHECK(tally.upper.at("t") == 8);

    // Rows finish behind the tally's back: its bound is now too high, never too low.
    complete_all(f, first.rows);
    complete_all(f, second.rows);
    REQUIRE(f.store.count_claimed("t", ShardRanges::all()) == 0);
    auto third = round(4);  // bound 8, headroom 2 < 4: the ceiling would bind, so it counts
    CHECK(third.counted);
    CHECK(third.rows.size() == 4);
    CHECK(tally.upper.at("t") == 4);

    // However the rounds go, the durable claimed count never passes the ceiling.
    for (int i = 0; i < 8; ++i) {
        const auto more = round(8);
        CHECK(f.store.count_claimed("t", ShardRanges::all()) <= 10);
        CHECK(tally.upper.at("t") >= f.store.count_claimed("t", ShardRanges::all()));
        if (i % 2 == 1) complete_all(f, more.rows);
    }

    // The claimer's own landed outcomes lower the bound without a count.
    complete_all(f, round(10).rows);
    const auto before = tally.upper.at("t");
    const auto claimed_now = f.store.count_claimed("t", ShardRanges::all());
    auto settling = request(f.owner, {route("t")}, quotas_of(f.store), 0);
    settling.settled = {{"t", before - claimed_now}};
    const auto settled = dispatch::claim_round(f.store.claims, settling, state);
    CHECK_FALSE(settled.counted);
    CHECK(tally.upper.at("t") == claimed_now);

    // New ranges make the bound unknown again.
    auto fewer = f.owner;
    fewer.ranges = ShardRanges{{{0, 511}}};
    CHECK(dispatch::claim_round(f.store.claims, request(fewer, {route("t")}, quotas_of(f.store), 1),
                                state)
              .counted);
}
