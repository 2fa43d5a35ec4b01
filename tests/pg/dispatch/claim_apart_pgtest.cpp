// Claims apart from the rounds: a route woken from idle while a busy route's round is in
// flight is claimed at once, on a lane of its own, under its namespace's quota, and its rows
// are never delivered twice.

#include <catch2/catch.hpp>

#include <atomic>
#include <functional>
#include <future>
#include <memory>
#include <set>

#include "dispatch_harness.hpp"

using namespace outboxd;
using namespace std::chrono_literals;
using test::DispatchHarness;
using test::new_row;

namespace {

sinks::SinkProfile hello_for(const std::string& ns, std::int32_t credit) {
    auto hello = DispatchHarness::default_hello(credit);
    hello.namespaces = {ns};
    return hello;
}

std::vector<store::NewRow> rows_of(const std::string& ns, int count) {
    std::vector<store::NewRow> rows;
    for (int i = 0; i < count; ++i) rows.push_back(new_row(ns + "-" + std::to_string(i), 0, ns));
    return rows;
}

// Holds the claims lane until release(): the round submitted meanwhile stays in flight.
class HeldLane {
public:
    explicit HeldLane(store::ClaimLane& lane) {
        auto held = released_.get_future().share();
        REQUIRE(lane.submit([held, this](store::ClaimStores&) {
            holding_ = true;
            held.wait();
        }));
    }
    ~HeldLane() { release(); }
    HeldLane(const HeldLane&) = delete;
    HeldLane& operator=(const HeldLane&) = delete;

    [[nodiscard]] bool holding() const { return holding_; }
    void release() {
        if (!released_flag_.exchange(true)) released_.set_value();
    }

private:
    std::promise<void> released_;
    std::atomic<bool> released_flag_{false};
    std::atomic<bool> holding_{false};
};

// Answers every task of `channel` it has not answered yet.
void answer_all(DispatchHarness& h, const std::string& session, test::FakeChannel& channel,
                std::size_t& answered) {
    const auto tasks = channel.tasks();
    for (; answered < tasks.size(); ++answered) (void)h.complete(session, tasks[answered]);
}

double claims_apart(DispatchHarness& h) {
    return h.metrics.claims_apart_total.Collect().counter.value;
}

// The harness's settings without its 20 ms poll backstop: a backstop round probes every idle
// route, the quiet one too, and a wake for a namespace in the round in flight waits for that
// round (held here) instead of going apart. Every row here is found through a wake.
dispatch::DispatchSettings without_backstop() {
    auto settings = test::fast_settings();
    settings.poll_interval = std::chrono::minutes{10};
    return settings;
}

// A busy route ("default") with a backlog being served, and a worker of namespace "quiet".
class BusyAndQuiet {
public:
    BusyAndQuiet(int busy_rows, std::int32_t quiet_credit,
                 const std::function<void(DispatchHarness&)>& setup = {})
        : busy_rows_(busy_rows) {
        if (setup) setup(h);
        busy = h.connect("busy", hello_for("default", 16));
        quiet = h.connect("quiet", hello_for("quiet", quiet_credit));
        h.store.append(rows_of("default", busy_rows));
        h.wake();
        h.start();
        REQUIRE(h.run_until([&] { return busy->tasks().size() == 16; }));
    }

    // Holds the claims lane, then answers the busy tasks: the next round is asked for and
    // waits behind the held lane, in flight, for as long as the result lives.
    std::unique_ptr<HeldLane> hold_a_round() {
        auto held = std::make_unique<HeldLane>(h.claims_lane());
        REQUIRE(h.run_until([&] { return held->holding(); }));
        answer_all(h, "busy", *busy, busy_answered_);
        h.run_for(50ms);
        REQUIRE(busy->tasks().size() == 16);  // the round has not come back
        return held;
    }

    // Answers every task until the busy route's rows and `quiet_rows` quiet ones are done;
    // `each` runs at every turn.
    bool answer_until_done(std::size_t quiet_rows, const std::function<void()>& each = {}) {
        return h.run_until(
            [&] {
                answer_all(h, "busy", *busy, busy_answered_);
                if (each) each();
                answer_all(h, "quiet", *quiet, quiet_answered_);
                return busy_answered_ == static_cast<std::size_t>(busy_rows_) &&
                       quiet_answered_ == quiet_rows;
            },
            20s);
    }

    DispatchHarness h{without_backstop()};
    std::shared_ptr<test::FakeChannel> busy;
    std::shared_ptr<test::FakeChannel> quiet;

private:
    int busy_rows_;
    std::size_t busy_answered_ = 0;
    std::size_t quiet_answered_ = 0;
};

}  // namespace

TEST_CASE("a quiet route woken while a busy route's round is in flight is claimed at once",
          "[pg][dispatch][tenant]") {
    BusyAndQuiet t{200, 4};
    auto& h = t.h;
    {
        const auto held = t.hold_a_round();
        h.store.append(rows_of("quiet", 1));
        h.wake("quiet", "default");
        // Before: the quiet row waited for the held round and then its own.
        CHECK(h.run_until([&] { return t.quiet->tasks().size() == 1; }, 3s));
        CHECK(claims_apart(h) == 1);
        CHECK(t.busy->tasks().size() == 16);  // still held: it went apart from the round
        // A wake of the busy route (in the round) is never claimed apart.
        h.wake();
        h.run_for(50ms);
        CHECK(claims_apart(h) == 1);
    }
    // Everything is delivered once, the quiet row too.
    REQUIRE(t.answer_until_done(1));
    h.run_for(100ms);
    CHECK(t.busy->tasks().size() == 200);
    CHECK(t.quiet->tasks().size() == 1);
    std::set<std::string> keys;
    for (const auto& task : t.busy->tasks()) keys.insert(task["dispatch_key"].get<std::string>());
    CHECK(keys.size() == 200);
    CHECK(h.await_status("quiet-0:0", store::Status::done));
}

TEST_CASE("a claim apart keeps to its namespace's quota and hands a backlog to the rounds",
          "[pg][dispatch][tenant]") {
    BusyAndQuiet t{100, 16, [](DispatchHarness& h) {
                       store::NamespaceSettings limited;
                       limited.name = "quiet";
                       limited.max_in_flight = 3;
                       h.store.put_namespace(limited);
                       h.namespaces.refresh_now();
                       REQUIRE(h.run_until([&] { return h.namespaces.quota("quiet") == 3; }));
                   }};
    auto& h = t.h;
    const auto claimed_quiet = [&] {
        return h.store.count_claimed("quiet", store::ShardRanges::all());
    };
    {
        const auto held = t.hold_a_round();
        h.store.append(rows_of("quiet", 10));
        h.wake("quiet", "default");
        REQUIRE(h.run_until([&] { return t.quiet->tasks().size() == 3; }, 3s));
        h.run_for(100ms);
        CHECK(t.quiet->tasks().size() == 3);  // the quota, not the worker's 16 credits
        CHECK(claimed_quiet() == 3);
        CHECK(claims_apart(h) == 1);
    }
    // The quiet route filled its claim: it has a backlog, which the rounds serve from now on
    // (always within the quota).
    REQUIRE(t.answer_until_done(10, [&] { CHECK(claimed_quiet() <= 3); }));
    CHECK(claims_apart(h) == 1);
}

TEST_CASE("a route a claim apart refuses rests, and the other routes woken with it are claimed",
          "[pg][dispatch][tenant]") {
    std::shared_ptr<test::FakeChannel> odd;
    BusyAndQuiet t{60, 4, [&odd](DispatchHarness& h) {
                       // A route whose names the database cannot take (hello validation keeps
                       // them out; the registry here does not).
                       auto hello = hello_for("quiet", 4);
                       hello.activity_types = {std::string("char\0ge", 7)};
                       odd = h.connect("odd", hello);
                   }};
    auto& h = t.h;
    {
        const auto held = t.hold_a_round();
        h.store.append(rows_of("quiet", 1));
        h.wake("quiet", "default");
        CHECK(h.run_until([&] { return t.quiet->tasks().size() == 1; }, 3s));
        CHECK(h.metrics.claim_route_errors_total.Collect().counter.value >= 1);
    }
    REQUIRE(t.answer_until_done(1));
    CHECK(odd->tasks().empty());
}
