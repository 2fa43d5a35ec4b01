// Tenant controls through the dispatcher (README, "Tenant controls") on a real PostgreSQL, with
// in-memory workers carrying node labels: namespace placement (unplaced, prefer with spill,
// pinned), a row's own node winning over placement, the pause hold under a quota, cancel with a
// late answer, and a requeued dead letter.

#include <algorithm>

#include <catch2/catch.hpp>

#include "dispatch_harness.hpp"

using namespace outboxd;
using namespace std::chrono_literals;
using store::Status;
using test::DispatchHarness;
using test::FakeChannel;
using test::new_row;
namespace protocol = worker::protocol;

namespace {

constexpr std::int64_t kQuota = 10000;  // placement cases: the quota never limits

// A worker of namespace "t" with node label `node` (none when nullopt).
sinks::SinkProfile worker_of(std::optional<std::string> node, std::int32_t credit = 16) {
    auto hello = DispatchHarness::default_hello(credit);
    hello.namespaces = {"t"};
    hello.node = std::move(node);
    return hello;
}

store::Placement placement(store::PlacementMode mode, std::vector<std::string> nodes = {}) {
    return {mode, std::move(nodes)};
}

std::vector<std::string> keys_of(const FakeChannel& channel) {
    std::vector<std::string> keys;
    for (const auto& task : channel.tasks()) {
        keys.push_back(task["dispatch_key"].get<std::string>());
    }
    std::sort(keys.begin(), keys.end());
    return keys;
}

// Stages `count` unpinned rows of namespace "t", workflows `prefix`-0, -1, ...
void stage(DispatchHarness& h, const std::string& prefix, int count) {
    std::vector<store::NewRow> rows;
    for (int i = 0; i < count; ++i) {
        rows.push_back(new_row(prefix + "-" + std::to_string(i), 0, "t"));
    }
    h.store.append(rows);
}

std::int64_t count(DispatchHarness& h, const std::string& where) {
    return h.db.exec("SELECT count(*) FROM outbox WHERE " + where)[0][0].as<std::int64_t>();
}

// Answers every task the worker holds and waits until the rows are done.
void complete_all(DispatchHarness& h, const std::string& session_id, const FakeChannel& channel,
                  std::size_t from = 0) {
    const auto tasks = channel.tasks();
    for (std::size_t i = from; i < tasks.size(); ++i) {
        CHECK(h.complete(session_id, tasks[i]));
    }
    for (std::size_t i = from; i < tasks.size(); ++i) {
        CHECK(h.await_status(tasks[i]["dispatch_key"].get<std::string>(), Status::done));
    }
}

}  // namespace

TEST_CASE("prefer sends unpinned rows to the preferred worker while it is up",
          "[pg][dispatch][tenant]") {
    DispatchHarness h;
    h.namespaces.set("t", kQuota, placement(store::PlacementMode::prefer, {"n1"}));
    auto n1 = h.connect("n1", worker_of("n1", 2));
    auto n2 = h.connect("n2", worker_of("n2"));
    stage(h, "wf", 5);
    h.start();

    REQUIRE(h.run_until([&] { return n1->tasks().size() == 2; }));
    h.run_for(200ms);
    // Busy is not absent: the rest wait for n1 rather than spill to n2.
    CHECK(n1->tasks().size() == 2);
    CHECK(n2->tasks().empty());
    CHECK(count(h, "status = 'pending'") == 3);

    complete_all(h, "n1", *n1);
    REQUIRE(h.run_until([&] { return n1->tasks().size() == 4; }));
    CHECK(n2->tasks().empty());
    for (const auto& task : n1->tasks()) CHECK(task["node"].is_null());
    CHECK(count(h, "node IS NOT NULL") == 0);
}

TEST_CASE("prefer spills to any worker when no preferred worker is up", "[pg][dispatch][tenant]") {
    DispatchHarness h;
    h.namespaces.set("t", kQuota, placement(store::PlacementMode::prefer, {"n1"}));
    auto n2 = h.connect("n2", worker_of("n2"));
    stage(h, "spill", 3);
    h.start();
    REQUIRE(h.run_until([&] { return n2->tasks().size() == 3; }));
    complete_all(h, "n2", *n2);

    // A preferred worker is back: new rows go to it again, none to n2.
    auto n1 = h.connect("n1", worker_of("n1"));
    stage(h, "back", 2);
    REQUIRE(h.run_until([&] { return n1->tasks().size() == 2; }));
    h.run_for(200ms);
    CHECK(n2->tasks().size() == 3);
    CHECK(keys_of(*n1) == std::vector<std::string>{"back-0:0", "back-1:0"});
    CHECK(count(h, "node IS NOT NULL") == 0);
}

TEST_CASE("an unplaced namespace reaches any worker", "[pg][dispatch][tenant]") {
    DispatchHarness h;  // no settings for "t": unplaced
    auto labelled = h.connect("labelled", worker_of("n2"));
    auto plain = h.connect("plain", worker_of(std::nullopt));
    stage(h, "wf", 4);
    h.start();
    REQUIRE(h.run_until([&] { return labelled->tasks().size() + plain->tasks().size() == 4; }));
    CHECK_FALSE(labelled->tasks().empty());
    CHECK_FALSE(plain->tasks().empty());
    h.run_for(100ms);
    CHECK(labelled->tasks().size() + plain->tasks().size() == 4);
}

TEST_CASE("a row's authored node wins over the namespace placement", "[pg][dispatch][tenant]") {
    DispatchHarness h;
    SECTION("prefer") {
        h.namespaces.set("t", kQuota, placement(store::PlacementMode::prefer, {"n1"}));
    }
    SECTION("pinned") {
        h.namespaces.set("t", kQuota, placement(store::PlacementMode::pinned, {"n1"}));
    }
    auto n1 = h.connect("n1", worker_of("n1"));
    auto n2 = h.connect("n2", worker_of("n2"));
    h.store.append(std::vector{new_row("pin", 0, "t", "default", "n2"), new_row("free", 0, "t"),
                               new_row("lost", 0, "t", "default", "n9")});
    h.start();

    REQUIRE(h.run_until([&] { return n2->tasks().size() == 1 && n1->tasks().size() == 1; }));
    h.run_for(200ms);
    CHECK(keys_of(*n2) == std::vector<std::string>{"pin:0"});
    CHECK(n2->tasks()[0]["node"] == "n2");
    CHECK(keys_of(*n1) == std::vector<std::string>{"free:0"});
    // Pinned to a label nobody serves: it waits, whatever the placement would allow.
    CHECK(h.status_of("lost:0") == Status::pending);
    CHECK(h.store.find("pin:0")->node == "n2");
    CHECK(h.store.find("lost:0")->node == "n9");
}

TEST_CASE("placement never rewrites a row's node", "[pg][dispatch][tenant]") {
    DispatchHarness h;
    h.namespaces.set("t", kQuota, placement(store::PlacementMode::prefer, {"n1"}));

    // Routing A: the preferred worker is up.
    auto n1 = h.connect("n1", worker_of("n1"));
    h.store.append(std::vector{new_row("a", 0, "t")});
    h.start();
    REQUIRE(h.run_until([&] { return n1->tasks().size() == 1; }));
    complete_all(h, "n1", *n1);

    // Routing B: n1 left; the same shape of row spills to n2.
    h.lose("n1");
    auto n2 = h.connect("n2", worker_of("n2"));
    h.store.append(std::vector{new_row("b", 0, "t")});
    REQUIRE(h.run_until([&] { return n2->tasks().size() == 1; }));
    complete_all(h, "n2", *n2);

    CHECK(n1->tasks()[0]["dispatch_key"] == "a:0");
    CHECK(n2->tasks()[0]["dispatch_key"] == "b:0");
    CHECK(n1->tasks()[0]["node"].is_null());
    CHECK(n2->tasks()[0]["node"] == n1->tasks()[0]["node"]);
    // Read back from the database: still unpinned after both routings.
    CHECK_FALSE(h.store.find("a:0")->node);
    CHECK_FALSE(h.store.find("b:0")->node);
    CHECK(count(h, "node IS NULL AND status = 'done'") == 2);
}

TEST_CASE("pinned waits for a pinned-label worker and never spills", "[pg][dispatch][tenant]") {
    DispatchHarness h;
    h.namespaces.set("t", kQuota, placement(store::PlacementMode::pinned, {"n1"}));
    auto n2 = h.connect("n2", worker_of("n2"));
    auto plain = h.connect("plain", worker_of(std::nullopt));
    stage(h, "wf", 3);
    h.start();

    h.run_for(300ms);
    CHECK(n2->tasks().empty());
    CHECK(plain->tasks().empty());
    CHECK(count(h, "status = 'pending' AND attempt = 0") == 3);  // never claimed meanwhile

    auto n1 = h.connect("n1", worker_of("n1"));
    REQUIRE(h.run_until([&] { return n1->tasks().size() == 3; }));
    complete_all(h, "n1", *n1);
    CHECK(n2->tasks().empty());
    CHECK(plain->tasks().empty());
    CHECK(count(h, "node IS NULL AND status = 'done'") == 3);
}

TEST_CASE("a paused workflow is held under a quota without taking the tenant's slot",
          "[pg][dispatch][tenant]") {
    DispatchHarness h;
    h.namespaces.set("t", 1, {});  // ceiling 1: one row of "t" claimed at a time
    h.store.append(std::vector{new_row("held", 0, "t"), new_row("held", 1, "t")});
    REQUIRE(h.store.pause_workflow("held"));
    h.store.append(std::vector{new_row("free", 0, "t"), new_row("free", 1, "t")});
    auto worker = h.connect("s1", worker_of(std::nullopt));
    h.start();

    // The younger, unpaused rows go first, one at a time.
    REQUIRE(h.run_until([&] { return worker->tasks().size() == 1; }));
    h.run_for(200ms);
    REQUIRE(worker->tasks().size() == 1);
    CHECK(worker->tasks()[0]["dispatch_key"] == "free:0");
    complete_all(h, "s1", *worker);
    REQUIRE(h.run_until([&] { return worker->tasks().size() == 2; }));
    CHECK(worker->tasks()[1]["dispatch_key"] == "free:1");
    complete_all(h, "s1", *worker, 1);

    // Headroom is back; only the hold keeps the paused rows pending.
    h.run_for(300ms);
    CHECK(worker->tasks().size() == 2);
    CHECK(h.status_of("held:0") == Status::pending);
    CHECK(h.status_of("held:1") == Status::pending);

    REQUIRE(h.store.resume_workflow("held"));
    REQUIRE(h.run_until([&] { return worker->tasks().size() == 3; }));
    h.run_for(100ms);
    CHECK(worker->tasks().size() == 3);  // still one at a time
    CHECK(worker->tasks()[2]["dispatch_key"] == "held:0");
    CHECK(worker->tasks()[2]["attempt"] == 1);
    complete_all(h, "s1", *worker, 2);
    REQUIRE(h.run_until([&] { return worker->tasks().size() == 4; }));
    complete_all(h, "s1", *worker, 3);
    CHECK(count(h, "status = 'done'") == 4);
}

TEST_CASE("cancel settles a workflow's live rows and a late completion changes nothing",
          "[pg][dispatch][tenant]") {
    DispatchHarness h;
    h.store.append(std::vector{new_row("wf", 0), new_row("wf", 1)});
    auto worker = h.connect("s1", DispatchHarness::default_hello(1));
    h.start();
    REQUIRE(h.run_until([&] { return worker->tasks().size() == 1; }));
    const auto task = worker->tasks()[0];
    const auto running = task["dispatch_key"].get<std::string>();
    const auto waiting = running == "wf:0" ? "wf:1" : "wf:0";
    REQUIRE(h.status_of(running) == Status::claimed);
    REQUIRE(h.status_of(waiting) == Status::pending);

    auto cancelled = h.store.cancel_workflow("wf");
    std::sort(cancelled.begin(), cancelled.end());
    CHECK(cancelled == std::vector<std::string>{"wf:0", "wf:1"});
    CHECK(h.store.cancel_workflow("wf").empty());  // nothing live is left

    // The worker finishes the claimed task afterwards: its answer is fenced off.
    (void)h.complete("s1", task);
    REQUIRE(h.run_until([&] { return h.outcomes().idle(); }));
    CHECK(h.outcomes().stale_answers() == 1);
    for (const auto& key : {running, std::string{waiting}}) {
        const auto row = h.store.find(key);
        CHECK(row->status == Status::cancelled);
        CHECK(row->finished_at);
        CHECK(row->claim_token == 0);
        CHECK(row->attempt == 0);
    }

    // Never dispatched again, and the worker's slot is free for other work.
    h.run_for(200ms);
    CHECK(worker->tasks().size() == 1);
    h.store.append(std::vector{new_row("other", 0)});
    REQUIRE(h.run_until([&] { return worker->tasks().size() == 2; }));
    CHECK(worker->tasks()[1]["dispatch_key"] == "other:0");
}

TEST_CASE("a requeued dead letter goes back through the dispatcher to done",
          "[pg][dispatch][tenant]") {
    DispatchHarness h;  // max_attempts 3
    auto row = new_row("wf", 0);
    row.attempt = 2;  // the last attempt
    h.store.append(std::vector{row});
    auto worker = h.connect("s1");
    h.start();
    REQUIRE(h.run_until([&] { return worker->tasks().size() == 1; }));
    CHECK(h.fail("s1", worker->tasks()[0]));
    REQUIRE(h.await_status("wf:0", Status::failed));

    const auto letters = h.store.list_dead_letters(std::string_view{"default"}, 10);
    REQUIRE(letters.size() == 1);
    CHECK(letters[0].dispatch_key == "wf:0");
    CHECK(letters[0].attempt == 3);
    CHECK(letters[0].last_error == "boom");
    h.run_for(200ms);
    CHECK(worker->tasks().size() == 1);  // a dead letter is never claimed

    REQUIRE(h.store.requeue_dead_letter("wf:0"));
    CHECK_FALSE(h.store.requeue_dead_letter("wf:0"));  // no longer a dead letter
    CHECK_FALSE(h.store.requeue_dead_letter("missing:0"));
    REQUIRE(h.run_until([&] { return worker->tasks().size() == 2; }));
    CHECK(worker->tasks()[1]["dispatch_key"] == "wf:0");
    CHECK(worker->tasks()[1]["attempt"] == 1);  // attempts start over
    CHECK(h.complete("s1", worker->tasks()[1]));
    CHECK(h.await_status("wf:0", Status::done));
    CHECK(h.store.list_dead_letters(std::nullopt, 10).empty());
    CHECK(h.store.find("wf:0")->attempt == 0);
}

// A preferred-label worker counts as "up" only for the task queue and activity types it
// runs: rows it can never run spill instead of waiting as if pinned.
TEST_CASE("prefer spills when the preferred workers cannot run the row", "[pg][dispatch][tenant]") {
    DispatchHarness h;
    h.namespaces.set("t", kQuota, placement(store::PlacementMode::prefer, {"n1"}));
    auto preferred = worker_of("n1");
    SECTION("the preferred worker serves another task queue") { preferred.task_queue = "gpu"; }
    SECTION("the preferred worker runs other activity types") {
        preferred.activity_types = {"email"};
    }
    auto n1 = h.connect("n1", preferred);
    auto n2 = h.connect("n2", worker_of("n2"));
    stage(h, "wf", 2);
    h.start();
    CHECK(h.run_until([&] { return n2->tasks().size() == 2; }, 2s));
    CHECK(n1->tasks().empty());
    CHECK(count(h, "node IS NULL") == 2);
}

// Same known bug, per activity type: a worker that also runs what the preferred one runs must
// still take the other types' rows.
TEST_CASE("prefer spills only the activity types no preferred worker runs",
          "[pg][dispatch][tenant]") {
    DispatchHarness h;
    h.namespaces.set("t", kQuota, placement(store::PlacementMode::prefer, {"n1"}));
    auto email_only = worker_of("n1");
    email_only.activity_types = {"email"};
    auto both = worker_of("n2");
    both.activity_types = {"charge", "email"};
    auto n1 = h.connect("n1", email_only);
    auto n2 = h.connect("n2", both);
    auto email = new_row("mail", 0, "t");
    email.activity_type = "email";
    h.store.append(std::vector{new_row("pay", 0, "t"), new_row("pay", 1, "t"), email});
    h.start();
    CHECK(h.run_until([&] { return n2->tasks().size() == 2 && n1->tasks().size() == 1; }, 2s));
    h.run_for(100ms);
    CHECK(keys_of(*n2) == std::vector<std::string>{"pay:0", "pay:1"});
    CHECK(keys_of(*n1) == std::vector<std::string>{"mail:0"});
}
