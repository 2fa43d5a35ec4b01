// The dispatch loop against a real PostgreSQL, with in-memory worker channels.

#include <catch2/catch.hpp>

#include <boost/asio/post.hpp>
#include "dispatch_harness.hpp"

#include "outboxd/store/wake_listener.hpp"

using namespace outboxd;
using namespace std::chrono_literals;
using store::Status;
using test::DispatchHarness;
using test::new_row;
namespace protocol = worker::protocol;

namespace {

double visible_in_seconds(DispatchHarness& h, const std::string& key) {
    return h.db
        .exec(
            "SELECT extract(epoch FROM visible_after - now()) FROM outbox WHERE dispatch_key = '" +
            key + "'")[0][0]
        .as<double>();
}

}  // namespace

TEST_CASE("a sweep pushes due rows to a worker and its answers mark them done", "[pg][dispatch]") {
    DispatchHarness h;
    h.store.append(std::vector{new_row("wf", 0), new_row("wf", 1)});
    auto worker = h.connect("s1");
    REQUIRE(h.run_until([&] { return worker->tasks().size() == 2; }));
    for (const auto& task : worker->tasks()) {
        CHECK(task["attempt"] == 1);  // one-based on the wire
        CHECK(task["activity_type"] == "charge");
        CHECK(task["input"] == nlohmann::json{{"amount", 42}});
        CHECK(task["timeout_ms"] == 30000);
        CHECK(h.status_of(task["dispatch_key"]) == Status::claimed);
        CHECK(h.complete("s1", task));
    }
    CHECK(h.await_status("wf:0", Status::done));
    CHECK(h.await_status("wf:1", Status::done));
    CHECK(h.dispatcher.outstanding() == 0);
    CHECK(h.store.claim(h.owner, 10).empty());
}

TEST_CASE("a retryable failure returns the row to pending with backoff and one attempt used",
          "[pg][dispatch]") {
    DispatchHarness h;
    h.store.append(std::vector{new_row("wf", 0)});
    auto worker = h.connect("s1");
    REQUIRE(h.run_until([&] { return worker->tasks().size() == 1; }));
    CHECK(h.fail("s1", worker->tasks()[0]));
    REQUIRE(h.await_status("wf:0", Status::pending));
    const auto row = h.store.find("wf:0");
    CHECK(row->attempt == 1);
    CHECK(row->last_error == "boom");
    CHECK(visible_in_seconds(h, "wf:0") > 0.8);  // base backoff 1 s, by the database clock
    h.run_for(200ms);
    CHECK(worker->tasks().size() == 1);  // fenced: not re-dispatched yet
}

TEST_CASE("a lost connection re-arms its tasks at once and still consumes an attempt",
          "[pg][dispatch]") {
    DispatchHarness h;
    h.store.append(std::vector{new_row("wf", 0)});
    auto first = h.connect("s1");
    REQUIRE(h.run_until([&] { return first->tasks().size() == 1; }));
    h.lose("s1");
    REQUIRE(h.await_status("wf:0", Status::pending));
    CHECK(h.store.find("wf:0")->attempt == 1);
    CHECK(visible_in_seconds(h, "wf:0") <= 0.0);

    // Fast failover: the next worker gets it straight away, as attempt 2.
    auto second = h.connect("s2");
    REQUIRE(h.run_until([&] { return second->tasks().size() == 1; }));
    CHECK(second->tasks()[0]["attempt"] == 2);
    CHECK(h.registry.find("s1") == nullptr);
}

TEST_CASE("lost connections still dead-letter once the attempts are used up", "[pg][dispatch]") {
    DispatchHarness h;
    auto row = new_row("wf", 0);
    row.attempt = 2;  // max_attempts is 3: this is the last attempt
    h.store.append(std::vector{row});
    auto worker = h.connect("s1");
    REQUIRE(h.run_until([&] { return worker->tasks().size() == 1; }));
    h.lose("s1");
    CHECK(h.await_status("wf:0", Status::failed));
    CHECK(h.store.find("wf:0")->last_error == "worker connection lost");
}

TEST_CASE("a failure on the last attempt dead-letters the row", "[pg][dispatch]") {
    DispatchHarness h;
    auto row = new_row("wf", 0);
    row.attempt = 2;
    h.store.append(std::vector{row});
    auto worker = h.connect("s1");
    REQUIRE(h.run_until([&] { return worker->tasks().size() == 1; }));
    CHECK(worker->tasks()[0]["attempt"] == 3);
    CHECK(h.fail("s1", worker->tasks()[0]));
    CHECK(h.await_status("wf:0", Status::failed));
    CHECK(h.store.find("wf:0")->attempt == 3);
    CHECK(h.store.claim(h.owner, 10).empty());
}

TEST_CASE("a non-retryable failure dead-letters at once", "[pg][dispatch]") {
    DispatchHarness h;
    h.store.append(std::vector{new_row("wf", 0)});
    auto worker = h.connect("s1");
    REQUIRE(h.run_until([&] { return worker->tasks().size() == 1; }));
    CHECK(h.fail("s1", worker->tasks()[0], false));
    CHECK(h.await_status("wf:0", Status::failed));
    CHECK(h.store.find("wf:0")->attempt == 1);
}

TEST_CASE("a failed done write leaves the row claimed, is kept, and lands later",
          "[pg][dispatch]") {
    DispatchHarness h;
    h.store.append(std::vector{new_row("wf", 0)});
    // Make every write of 'done' fail inside the database.
    h.db.exec(R"SQL(
        CREATE FUNCTION refuse_done() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN RAISE EXCEPTION 'done writes are refused'; END $$;
        CREATE TRIGGER refuse_done BEFORE UPDATE ON outbox FOR EACH ROW
        WHEN (NEW.status = 'done') EXECUTE FUNCTION refuse_done();)SQL");
    auto worker = h.connect("s1");
    REQUIRE(h.run_until([&] { return worker->tasks().size() == 1; }));
    CHECK(h.complete("s1", worker->tasks()[0]));
    REQUIRE(h.run_until([&] { return !h.outcomes().healthy(); }));
    h.run_for(300ms);
    const auto row = h.store.find("wf:0");
    CHECK(row->status == Status::claimed);  // never retried, never dead-lettered
    CHECK(row->attempt == 0);

    // A node that cannot write outcomes claims nothing new, woken or not.
    h.store.append(std::vector{new_row("wf", 1)});
    h.wake();
    h.run_for(300ms);
    CHECK(h.status_of("wf:1") == Status::pending);
    CHECK(worker->tasks().size() == 1);

    // The write is kept and lands once the database accepts it.
    h.db.exec("DROP TRIGGER refuse_done ON outbox");
    CHECK(h.await_status("wf:0", Status::done));
    CHECK(h.run_until([&] { return worker->tasks().size() == 2; }));
}

TEST_CASE("the wake dispatches a staged row far under a 10 s poll", "[pg][dispatch]") {
    auto settings = test::fast_settings();
    settings.poll_interval = 10s;
    DispatchHarness h{settings};
    auto worker = h.connect("s1");
    h.start();  // the first sweep finds nothing
    h.run_for(100ms);
    store::WakeListener wake{h.db.url(), [&h](const store::WakeNotice& notice) {
                                 boost::asio::post(h.ioc, [&h, notice] {
                                     h.dispatcher.woken(notice.routes, notice.anywhere);
                                 });
                             }};
    REQUIRE(h.run_until([&] { return wake.listening(); }));
    h.run_for(50ms);
    const auto started = std::chrono::steady_clock::now();
    h.db.exec(
        "INSERT INTO outbox (workflow_id, ordinal, activity_type) VALUES ('wf', 0, 'charge')");
    REQUIRE(h.run_until([&] { return worker->tasks().size() == 1; }, 1s));
    CHECK(std::chrono::steady_clock::now() - started < 1s);
}

TEST_CASE("the poll dispatches a staged row when no wake ever fires", "[pg][dispatch]") {
    DispatchHarness h;
    auto worker = h.connect("s1");
    h.start();
    h.run_for(100ms);
    h.db.exec(
        "INSERT INTO outbox (workflow_id, ordinal, activity_type) VALUES ('wf', 0, 'charge')");
    CHECK(h.run_until([&] { return worker->tasks().size() == 1; }, 5s));
}

TEST_CASE("drain stops claiming, waits for answers, then reports done", "[pg][dispatch]") {
    DispatchHarness h;
    h.store.append(std::vector{new_row("wf", 0)});
    auto worker = h.connect("s1");
    h.start();
    REQUIRE(h.run_until([&] { return worker->tasks().size() == 1; }));
    bool drained = false;
    h.dispatcher.drain([&] { drained = true; });
    h.store.append(std::vector{new_row("wf", 1)});
    h.run_for(200ms);
    CHECK_FALSE(drained);                           // a task is still out
    CHECK(h.status_of("wf:1") == Status::pending);  // nothing new is claimed
    CHECK(h.complete("s1", worker->tasks()[0]));
    CHECK(h.run_until([&] { return drained; }));
    CHECK(h.status_of("wf:0") == Status::done);
    CHECK(worker->tasks().size() == 1);
}

TEST_CASE("tasks route by the row's own namespace, task queue and node", "[pg][dispatch]") {
    DispatchHarness h;
    auto remote_hello = DispatchHarness::default_hello();
    remote_hello.namespaces = {"remote"};
    auto remote = h.connect("remote", remote_hello);
    auto gpu_hello = DispatchHarness::default_hello();
    gpu_hello.task_queue = "gpu";
    gpu_hello.node = "box-7";
    auto gpu = h.connect("gpu", gpu_hello);

    h.store.append(std::vector{new_row("a", 0, "remote"), new_row("b", 0, "default"),
                               new_row("c", 0, "default", "gpu", "box-7"),
                               new_row("d", 0, "default", "gpu", "box-9")});
    REQUIRE(h.run_until([&] { return remote->tasks().size() == 1 && gpu->tasks().size() == 1; }));
    CHECK(remote->tasks()[0]["dispatch_key"] == "a:0");
    CHECK(remote->tasks()[0]["namespace"] == "remote");
    CHECK(remote->tasks()[0]["node"].is_null());
    CHECK(gpu->tasks()[0]["dispatch_key"] == "c:0");
    CHECK(gpu->tasks()[0]["node"] == "box-7");
    h.run_for(200ms);
    // Nobody can run b (default/default) or d (pinned to box-9): never claimed.
    CHECK(h.status_of("b:0") == Status::pending);
    CHECK(h.status_of("d:0") == Status::pending);
}

TEST_CASE("a worker never holds more tasks than its credit window", "[pg][dispatch]") {
    DispatchHarness h;
    std::vector<store::NewRow> rows;
    for (int i = 0; i < 10; ++i) rows.push_back(new_row("wf-" + std::to_string(i), 0));
    h.store.append(rows);
    auto worker = h.connect("s1", DispatchHarness::default_hello(2));
    REQUIRE(h.run_until([&] { return worker->tasks().size() == 2; }));
    h.run_for(200ms);
    CHECK(worker->tasks().size() == 2);
    CHECK(h.store.count_claimed("default", store::ShardRanges::all()) == 2);  // claimed = capacity

    std::size_t answered = 0;
    while (answered < 10) {
        const auto tasks = worker->tasks();
        REQUIRE(h.run_until([&] { return worker->tasks().size() > answered; }));
        CHECK(h.dispatcher.outstanding() <= 2);
        CHECK(h.complete("s1", worker->tasks()[answered]));
        ++answered;
    }
    CHECK(h.run_until(
        [&] { return h.store.count_inflight("default", store::ShardRanges::all()) == 0; }));
}

TEST_CASE("with no worker able to run them, rows are never claimed", "[pg][dispatch]") {
    DispatchHarness h;
    h.store.append(std::vector{new_row("wf", 0)});
    auto hello = DispatchHarness::default_hello();
    hello.activity_types = {"email"};
    auto worker = h.connect("s1", hello);
    h.start();
    h.run_for(300ms);
    CHECK(h.status_of("wf:0") == Status::pending);
    CHECK(worker->tasks().empty());
}

TEST_CASE("a task that times out is retried with backoff and its late answer is refused",
          "[pg][dispatch]") {
    auto settings = test::fast_settings();
    settings.task_timeout = 150ms;
    DispatchHarness h{settings};
    h.store.append(std::vector{new_row("wf", 0)});
    auto worker = h.connect("s1");
    h.start();
    REQUIRE(h.run_until([&] { return worker->tasks().size() == 1; }));
    REQUIRE(h.await_status("wf:0", Status::pending));
    const auto row = h.store.find("wf:0");
    CHECK(row->attempt == 1);
    CHECK_THAT(*row->last_error, Catch::Contains("timed out"));
    CHECK(h.dispatcher.on_complete("s1", worker->tasks()[0]["task_id"].get<std::string>()) ==
          sinks::Answer::unknown_task);
    CHECK(h.status_of("wf:0") == Status::pending);
    CHECK(h.entry("s1").outstanding() == 0);  // the timed-out slot is free again
}

TEST_CASE("answers for unknown tasks or another worker's tasks change nothing", "[pg][dispatch]") {
    DispatchHarness h;
    h.store.append(std::vector{new_row("wf", 0)});
    auto worker = h.connect("s1");
    REQUIRE(h.run_until([&] { return worker->tasks().size() == 1; }));
    auto other = h.connect("s2");
    const auto task = worker->tasks()[0];
    CHECK_FALSE(h.complete("s2", task));
    CHECK(h.dispatcher.on_fail("s1", "999.999", "x", true) == sinks::Answer::unknown_task);
    h.run_for(100ms);
    CHECK(h.status_of("wf:0") == Status::claimed);
    CHECK(h.dispatcher.outstanding() == 1);
}

TEST_CASE("a paused workflow's row is held pending, then dispatches after resume",
          "[pg][dispatch]") {
    DispatchHarness h;
    h.store.append(std::vector{new_row("wf", 0)});
    h.store.pause_workflow("wf");
    auto worker = h.connect("s1");
    h.start();
    h.run_for(300ms);
    CHECK(worker->tasks().empty());
    CHECK(h.status_of("wf:0") == Status::pending);
    h.store.resume_workflow("wf");
    REQUIRE(h.run_until([&] { return worker->tasks().size() == 1; }));
    CHECK(h.complete("s1", worker->tasks()[0]));
    CHECK(h.await_status("wf:0", Status::done));
}

TEST_CASE(
    "a resume made anywhere wakes the dispatcher to claim from the front, far under "
    "a 10 s poll",
    "[pg][dispatch]") {
    auto settings = test::fast_settings();
    settings.poll_interval = 10s;
    DispatchHarness h{settings};
    h.store.append(std::vector{new_row("held", 0), new_row("other", 0)});
    h.store.pause_workflow("held");
    auto worker = h.connect("s1");
    // Wired as a node wires it (src/app/node.cpp).
    store::WakeListener wake{h.db.url(), [&h](const store::WakeNotice& notice) {
                                 boost::asio::post(h.ioc, [&h, notice] {
                                     if (notice.from_front) h.dispatcher.claim_from_front();
                                     h.dispatcher.woken(notice.routes, notice.anywhere);
                                 });
                             }};
    REQUIRE(h.run_until([&] { return wake.listening(); }));
    h.start();
    // The first claims read past the held row; the cursors move on beyond it.
    REQUIRE(h.run_until([&] { return worker->tasks().size() == 1; }));
    h.run_for(300ms);
    REQUIRE(worker->tasks().size() == 1);

    const auto started = std::chrono::steady_clock::now();
    test::TestStore elsewhere{h.db.url()};  // the resume arrives through another node's API
    REQUIRE(elsewhere.resume_workflow("held"));
    REQUIRE(h.run_until([&] { return worker->tasks().size() == 2; }, 2s));
    CHECK(std::chrono::steady_clock::now() - started < 2s);
    CHECK(worker->tasks()[1]["dispatch_key"] == "held:0");
}

TEST_CASE("claims of a dead incarnation are re-armed and dispatched", "[pg][dispatch]") {
    DispatchHarness h;
    h.store.append(std::vector{new_row("wf", 0)});
    // Another incarnation claimed it and died without a heartbeat.
    REQUIRE(h.store.claim(h.owner, 1).size() == 1);
    h.db.exec("UPDATE outbox SET claimed_by = 'node-x/dead' WHERE dispatch_key = 'wf:0'");
    auto worker = h.connect("s1");
    h.start();
    REQUIRE(h.run_until([&] { return worker->tasks().size() == 1; }));
    CHECK(worker->tasks()[0]["attempt"] == 1);  // re-arm keeps the attempt
}

TEST_CASE("claims read on from their route's mark; rows behind it wait for a claim from the front",
          "[pg][dispatch]") {
    auto settings = test::fast_settings();
    settings.poll_interval = 10s;  // no backstop during the test
    settings.claim_lookback = 0ms;
    DispatchHarness h{settings};
    auto worker = h.connect("s1");
    h.start();
    h.store.append(std::vector{new_row("wf", 0)});
    h.wake();
    REQUIRE(h.run_until([&] { return worker->tasks().size() == 1; }));

    // Committed now, but due an hour ago: behind everything claimed so far.
    auto behind = new_row("old", 0);
    behind.visible_after = store::now() - std::chrono::hours{1};
    h.store.append(std::vector{behind, new_row("wf", 1)});
    h.wake();
    REQUIRE(h.run_until([&] { return worker->tasks().size() == 2; }));
    CHECK(worker->tasks()[1]["dispatch_key"] == "wf:1");
    h.run_for(100ms);
    CHECK(worker->tasks().size() == 2);
    CHECK(h.status_of("old:0") == Status::pending);

    // What a re-arm, a resume or the poll backstop asks for: a claim from the front.
    h.dispatcher.claim_from_front();
    REQUIRE(h.run_until([&] { return worker->tasks().size() == 3; }));
    CHECK(worker->tasks()[2]["dispatch_key"] == "old:0");
}

TEST_CASE("a lost connection's re-arms are claimed again at once, without waiting for the poll",
          "[pg][dispatch]") {
    auto settings = test::fast_settings();
    settings.poll_interval = 10s;
    settings.claim_lookback = 0ms;
    DispatchHarness h{settings};
    auto first = h.connect("s1");
    h.start();
    std::vector<store::NewRow> rows;
    for (int i = 0; i < 4; ++i) rows.push_back(new_row("wf", i));
    h.store.append(rows);
    h.wake();
    REQUIRE(h.run_until([&] { return first->tasks().size() == 4; }));
    h.store.append(std::vector{new_row("wf", 9)});  // the cursor moves past the four
    auto second = h.connect("s2");
    REQUIRE(h.run_until([&] { return second->tasks().size() == 1; }));

    h.lose("s1");  // re-armed in their old place, behind the cursor
    REQUIRE(h.run_until([&] { return second->tasks().size() == 5; }, 5s));
    for (std::size_t i = 1; i < 5; ++i) CHECK(second->tasks()[i]["attempt"] == 2);
}
