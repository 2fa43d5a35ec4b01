// Claims go where the work is: idle routes cost nothing, wakes name routes, weights share.

#include <catch2/catch.hpp>

#include <algorithm>
#include <condition_variable>
#include <map>
#include <mutex>
#include <thread>

#include "dispatch_harness.hpp"
#include "outboxd/store/wake_listener.hpp"

using namespace outboxd;
using namespace std::chrono_literals;
using test::DispatchHarness;
using test::new_row;

namespace {

sinks::SinkProfile hello_for(const std::string& ns, std::int32_t credit = 16) {
    auto hello = DispatchHarness::default_hello(credit);
    hello.namespaces = {ns};
    return hello;
}

// Answers every task it has not answered yet.
void answer_all(DispatchHarness& h, const std::string& session, test::FakeChannel& channel,
                std::size_t& answered) {
    const auto tasks = channel.tasks();
    for (; answered < tasks.size(); ++answered) {
        (void)h.complete(session, tasks[answered]);
    }
}

}  // namespace

TEST_CASE("hundreds of idle routes cost a busy one nothing", "[pg][dispatch][tenant]") {
    auto settings = test::fast_settings();
    settings.batch_size = 16;
    DispatchHarness h{settings};
    for (int i = 0; i < 300; ++i)
        (void)h.connect("idle-" + std::to_string(i), hello_for("idle-" + std::to_string(i)));
    auto busy = h.connect("busy", hello_for("default", 64));
    std::vector<store::NewRow> rows;
    for (int i = 0; i < 2000; ++i) rows.push_back(new_row("busy-" + std::to_string(i), 0));
    h.store.append(rows);
    h.wake();
    h.start();
    std::size_t answered = 0;
    REQUIRE(h.run_until(
        [&] {
            answer_all(h, "busy", *busy, answered);
            return answered == 2000;
        },
        30s));
    // Shared round robin over 301 namespaces with credit took ~37,000 rounds of 16 for this;
    // rounds that claim only the route with work take 2000 / 16 = 125, and a few to probe.
    const auto rounds = h.metrics.claim_seconds.Collect().histogram.sample_count;
    INFO(rounds << " claim rounds");
    CHECK(rounds < 400);
}

TEST_CASE("a wake names the routes its statement staged into", "[pg][dispatch][tenant]") {
    test::TestDatabase db;
    std::mutex mutex;
    std::condition_variable arrived;
    std::vector<store::WakeNotice> notices;
    store::WakeListener listener{db.url(), [&](const store::WakeNotice& notice) {
                                     {
                                         std::lock_guard lock{mutex};
                                         notices.push_back(notice);
                                     }
                                     arrived.notify_all();
                                 }};
    // Listening first: the notice for (re)connecting, which looks everywhere, comes then.
    {
        std::unique_lock lock{mutex};
        REQUIRE(arrived.wait_for(lock, 5s, [&] {
            return std::any_of(notices.begin(), notices.end(),
                               [](const store::WakeNotice& n) { return n.anywhere; });
        }));
        notices.clear();
    }
    REQUIRE(listener.listening());
    db.exec(
        "INSERT INTO outbox (workflow_id, ordinal, activity_type, namespace, task_queue) VALUES "
        "('w1', 0, 'a', 'billing', 'default'), ('w2', 0, 'a', 'billing', 'slow'), "
        "('w3', 0, 'a', 'billing', 'default'), ('w4', 0, 'a', 'mail', 'default')");
    std::vector<std::pair<std::string, std::string>> named;
    std::unique_lock lock{mutex};
    (void)arrived.wait_for(lock, 5s, [&] {
        for (const auto& notice : notices) {
            CHECK_FALSE(notice.anywhere);
            for (const auto& route : notice.routes) {
                if (std::find(named.begin(), named.end(), route) == named.end())
                    named.push_back(route);
            }
        }
        notices.clear();
        return named.size() >= 3;
    });
    std::sort(named.begin(), named.end());
    CHECK(named == std::vector<std::pair<std::string, std::string>>{
                       {"billing", "default"}, {"billing", "slow"}, {"mail", "default"}});
}

TEST_CASE("wake payloads are read defensively", "[pg][store][tenant]") {
    store::WakeNotice notice;
    notice.add(R"({"routes":[["a","q"],["a","q"],["b","q"]]})");
    CHECK(notice.routes.size() == 2);
    CHECK_FALSE(notice.anywhere);
    notice.add("");
    CHECK(notice.anywhere);
    store::WakeNotice odd;
    odd.add(R"({"routes":[["a"],[1,2],"x"]})");
    CHECK(odd.anywhere);
    CHECK(odd.routes.empty());
    odd.add("front");
    CHECK(odd.from_front);

    // Anyone who may NOTIFY can send anything: it only ever widens the look, never throws.
    for (const std::string& hostile :
         {std::string{"{\"routes\":[[\"\xc3\",\"q\"]]}"},                  // not UTF-8
          std::string(10000, '[') + std::string(10000, ']'),               // deep nesting
          "{\"routes\":[[\"" + std::string(1 << 20, 'x') + "\",\"q\"]]}",  // 1 MB name
          std::string{"{\"routes\":[[1e999999,\"q\"]]}"},                  // a huge number
          std::string{"\0garbage", 8}}) {
        store::WakeNotice notice_of_hostile;
        notice_of_hostile.add(hostile);
        CHECK(notice_of_hostile.routes.size() <= 1);
        CHECK((notice_of_hostile.anywhere || notice_of_hostile.routes.size() == 1));
    }
    // A NUL inside a name is a name like any other: it can only match a route a worker
    // connected with, and names with NUL never get that far (hello validation).
    store::WakeNotice nul;
    nul.add(R"({"routes":[["a\u0000b","q"]]})");
    REQUIRE(nul.routes.size() == 1);
    CHECK(nul.routes[0].first == std::string("a\0b", 3));
}

TEST_CASE("namespace weights share the rounds of busy namespaces", "[pg][dispatch][tenant]") {
    auto settings = test::fast_settings();
    settings.batch_size = 70;
    DispatchHarness h{settings};
    for (const auto& [ns, weight] :
         std::vector<std::pair<std::string, int>>{{"one", 1}, {"two", 2}, {"four", 4}}) {
        store::NamespaceSettings s;
        s.name = ns;
        s.weight = weight;
        h.store.put_namespace(s);
        std::vector<store::NewRow> rows;
        for (int i = 0; i < 2000; ++i) rows.push_back(new_row(ns + "-" + std::to_string(i), 0, ns));
        h.store.append(rows);
    }
    h.namespaces.refresh_now();
    REQUIRE(h.run_until([&] { return h.namespaces.weight("four") == 4; }));
    // A worker each with more credit than the rows, never answering: the rounds' claims are
    // what the shares gave, while all three have a backlog.
    std::vector<std::shared_ptr<test::FakeChannel>> workers;
    for (const auto* ns : {"one", "two", "four"})
        workers.push_back(h.connect(ns, hello_for(ns, 5000)));
    const auto total = [&] {
        std::size_t n = 0;
        for (const auto& w : workers) n += w->tasks().size();
        return n;
    };
    REQUIRE(h.run_until([&] { return total() >= 1400; }));
    const double all = static_cast<double>(total());
    INFO(workers[0]->tasks().size()
         << " : " << workers[1]->tasks().size() << " : " << workers[2]->tasks().size());
    CHECK(static_cast<double>(workers[0]->tasks().size()) / all == Approx(1.0 / 7).epsilon(0.1));
    CHECK(static_cast<double>(workers[1]->tasks().size()) / all == Approx(2.0 / 7).epsilon(0.1));
    CHECK(static_cast<double>(workers[2]->tasks().size()) / all == Approx(4.0 / 7).epsilon(0.1));
}

TEST_CASE("metrics count what their names say: claims, sweeps' cancels, due to pushed",
          "[pg][dispatch][metrics]") {
    DispatchHarness h;
    std::vector<store::NewRow> rows;
    for (int i = 0; i < 5; ++i) rows.push_back(new_row("drained-" + std::to_string(i), 0));
    h.store.append(rows);
    auto worker = h.connect("s1");
    // The round goes to the database, then the node starts draining: every claimed row is
    // handed back, and still counts as claimed.
    h.ioc.restart();
    h.ioc.poll();
    bool drained = false;
    h.dispatcher.drain([&] { drained = true; });
    REQUIRE(h.run_until([&] { return drained; }));
    CHECK(worker->tasks().empty());
    CHECK(h.metrics.claimed("default").Value() == 5.0);
    CHECK(h.metrics.rows_released_total.Value() == 5.0);
}

TEST_CASE("rows the reconcile sweep settles for a cancelled workflow count as cancelled outcomes",
          "[pg][dispatch][metrics]") {
    DispatchHarness h;
    h.store.cancel_workflow("gone");
    // Staged after the cancel (by plain SQL, say): the sweep settles them.
    h.store.append(std::vector{new_row("gone", 0, "billing"), new_row("gone", 1, "billing")});
    h.maintenance.run_now("reconcile");
    REQUIRE(h.run_until([&] { return h.status_of("gone:1") == store::Status::cancelled; }));
    CHECK(h.run_until([&] { return h.metrics.outcome("billing", "cancelled").Value() == 2.0; }));
}

TEST_CASE("dispatch latency is due to pushed by the database's clock for the due part",
          "[pg][dispatch][metrics]") {
    DispatchHarness h;
    auto late = new_row("late", 0);
    late.visible_after = store::now() - std::chrono::seconds{30};
    h.store.append(std::vector{late});
    auto worker = h.connect("s1");
    REQUIRE(h.run_until([&] { return worker->tasks().size() == 1; }));
    const auto histogram = h.metrics.dispatch_latency.Collect().histogram;
    CHECK(histogram.sample_count == 1);
    CHECK(histogram.sample_sum >= 30.0);
    CHECK(histogram.sample_sum < 40.0);
}
