// Data the database refuses, on the claim and outcome paths: the item at fault is isolated
// and recorded, everything else goes on, and nothing is retried forever.

#include <catch2/catch.hpp>

#include "dispatch_harness.hpp"
#include "outboxd/dispatch/claim_round.hpp"

using namespace outboxd;
using namespace std::chrono_literals;
using store::Status;
using test::DispatchHarness;
using test::new_row;

namespace {

// A trigger that refuses, as data (SQLSTATE 22000), updates of the row `key` to any status
// in `statuses`.
void refuse_updates(DispatchHarness& h, const std::string& key, const std::string& statuses) {
    h.db.exec(
        "CREATE FUNCTION refuse_poison() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
        "RAISE EXCEPTION USING ERRCODE = 'data_exception', MESSAGE = 'poison refused'; END $$; "
        "CREATE TRIGGER refuse_poison BEFORE UPDATE ON outbox FOR EACH ROW WHEN "
        "(NEW.dispatch_key = '" +
        key + "' AND NEW.status IN (" + statuses + ")) EXECUTE FUNCTION refuse_poison();");
}

// Stages `count` rows of workflow `wf`, lets one worker take them all and answers every one
// in the same handler, so that their outcomes share one write.
void complete_all(DispatchHarness& h, int count) {
    std::vector<store::NewRow> rows;
    for (int i = 0; i < count; ++i) rows.push_back(new_row("wf", i));
    h.store.append(rows);
    auto worker = h.connect("s1");
    REQUIRE(h.run_until([&] { return static_cast<int>(worker->tasks().size()) == count; }));
    for (const auto& task : worker->tasks()) {
        CHECK(h.complete("s1", task));
    }
}

}  // namespace

TEST_CASE("an outcome the database refuses as data is isolated and dead-lettered, the rest land",
          "[pg][dispatch][hostile]") {
    DispatchHarness h;
    refuse_updates(h, "wf:3", "'done'");
    complete_all(h, 8);
    REQUIRE(h.run_until([&] { return h.store.find("wf:3")->status == Status::failed; }));
    for (int i = 0; i < 8; ++i) {
        if (i != 3) CHECK(h.await_status("wf:" + std::to_string(i), Status::done));
    }
    const auto poisoned = h.store.find("wf:3");
    REQUIRE(poisoned->last_error);
    CHECK(poisoned->last_error->find("outcome could not be recorded") != std::string::npos);
    CHECK(poisoned->last_error->find("poison refused") != std::string::npos);
    CHECK(h.run_until([&] { return h.outcomes().idle(); }));
    CHECK(h.outcomes().healthy());
    CHECK(h.metrics.outcomes_refused_total.Value() == 1.0);

    // The writer goes on: new work is claimed and its outcome written.
    h.store.append(std::vector{new_row("next", 0)});
    h.wake();
    auto& worker = dynamic_cast<test::FakeChannel&>(*h.entry("s1").sink);
    REQUIRE(h.run_until([&] { return worker.tasks().size() == 9; }));
    CHECK(h.complete("s1", worker.tasks()[8]));
    CHECK(h.await_status("next:0", Status::done));
}

TEST_CASE(
    "an outcome refused even as a dead letter is given up, and its row stays claimed "
    "for the backstop",
    "[pg][dispatch][hostile]") {
    DispatchHarness h;
    refuse_updates(h, "wf:1", "'done', 'failed'");
    complete_all(h, 4);
    for (const int i : {0, 2, 3}) CHECK(h.await_status("wf:" + std::to_string(i), Status::done));
    REQUIRE(h.run_until([&] { return h.outcomes().idle(); }));
    h.run_for(200ms);
    // Never lost: claimed, with its claim intact, until the stale-claim backstop re-arms it.
    CHECK(h.store.find("wf:1")->status == Status::claimed);
    CHECK(h.outcomes().healthy());
    CHECK(h.metrics.outcomes_refused_total.Value() == 1.0);
    CHECK(h.metrics.outcomes_abandoned_total.Value() == 1.0);
}

TEST_CASE(
    "an outcome a trigger keeps refusing is isolated once it fails alone while others "
    "land",
    "[pg][dispatch][hostile]") {
    DispatchHarness h;
    // Not a data error (P0001, raise_exception): retried a few times as a whole first.
    h.db.exec(
        "CREATE FUNCTION refuse_one() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
        "RAISE EXCEPTION 'wf:2 may not finish'; END $$; "
        "CREATE TRIGGER refuse_one BEFORE UPDATE ON outbox FOR EACH ROW WHEN "
        "(NEW.dispatch_key = 'wf:2' AND NEW.status = 'done') EXECUTE FUNCTION refuse_one();");
    complete_all(h, 6);
    REQUIRE(h.await_status("wf:2", Status::failed, 20s));
    for (const int i : {0, 1, 3, 4, 5})
        CHECK(h.await_status("wf:" + std::to_string(i), Status::done));
    CHECK(h.store.find("wf:2")->last_error->find("wf:2 may not finish") != std::string::npos);
    CHECK(h.run_until([&] { return h.outcomes().healthy() && h.outcomes().idle(); }));
}

TEST_CASE("a route whose claim the database refuses rests while the other routes are claimed",
          "[pg][dispatch][hostile]") {
    DispatchHarness h;
    // Claiming any row of namespace 'poisoned' fails as data.
    h.db.exec(
        "CREATE FUNCTION refuse_claim() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
        "RAISE EXCEPTION USING ERRCODE = 'invalid_text_representation', MESSAGE = 'no'; END $$; "
        "CREATE TRIGGER refuse_claim BEFORE UPDATE ON outbox FOR EACH ROW WHEN "
        "(NEW.namespace = 'poisoned' AND NEW.status = 'claimed') EXECUTE FUNCTION refuse_claim();");
    auto poisoned_row = new_row("p", 0);
    poisoned_row.namespace_name = "poisoned";
    h.store.append(std::vector{poisoned_row, new_row("good", 0), new_row("good", 1)});
    auto hello = DispatchHarness::default_hello();
    hello.namespaces = {"poisoned"};
    auto bad = h.connect("bad", hello);
    auto good = h.connect("good");
    h.start();
    REQUIRE(h.run_until([&] { return good->tasks().size() == 2; }));
    h.run_for(500ms);  // the poll asks again and again: the route rests, nothing spins
    CHECK(bad->tasks().empty());
    CHECK(h.status_of("p:0") == Status::pending);
    CHECK(h.metrics.claim_route_errors_total.Value() == 1.0);
    const auto rounds = h.metrics.claim_seconds.Collect().histogram.sample_count;
    INFO(rounds << " claim rounds in ~0.5 s");
    CHECK(rounds < 100);
}

TEST_CASE("a claim scope holding a NUL byte is refused before it reaches SQL, and only that route",
          "[pg][dispatch][hostile]") {
    test::StoreFixture fx;
    fx.store.append(std::vector{new_row("a", 0), new_row("b", 0)});
    worker::Route bad;
    bad.scope.namespace_name = std::string{"def\0ault", 8};
    bad.capacity = 10;
    worker::Route good;
    good.capacity = 10;
    dispatch::ClaimerState state{std::chrono::milliseconds{0}};
    dispatch::ClaimRequest request;
    request.owner = fx.owner;
    request.routes = {bad, good};
    request.quota = [](const std::string&) { return std::int64_t{10000}; };
    request.batch_size = 16;
    const auto result = dispatch::claim_round(fx.store.claims, request, state);
    CHECK(result.rows.size() == 2);
    REQUIRE(result.refused.size() == 1);
    CHECK(result.refused[0].second.find("NUL") != std::string::npos);
}

TEST_CASE("a row whose task frame is larger than its worker reads is dead-lettered, not sent",
          "[pg][dispatch][hostile]") {
    DispatchHarness h;
    auto big = new_row("big", 0);
    big.input_json = "\"" + std::string(5000, 'x') + "\"";
    h.store.append(std::vector{big, new_row("small", 0)});
    auto worker = h.connect("s1", DispatchHarness::default_hello(), 2000);
    REQUIRE(h.run_until([&] { return worker->tasks().size() == 1; }));
    CHECK(worker->tasks()[0]["dispatch_key"] == "small:0");
    REQUIRE(h.await_status("big:0", Status::failed));
    const auto refused = h.store.find("big:0");
    REQUIRE(refused->last_error);
    CHECK(refused->last_error->find("more than the 2000 the worker reads") != std::string::npos);
    CHECK(h.entry("s1").outstanding() == 1);  // the refused row gave its credit back
}
