// Pure pieces of the SDK: URL parsing, the credit split and its rebalancing, reconnect backoff,
// cluster plans, the database of task frames.

#include <catch2/catch.hpp>

#include <algorithm>
#include <random>
#include <set>

// Internal headers: not part of the public include tree.
#include "outboxd/util/retry_backoff.hpp"
#include "sdk/cluster_plan.hpp"
#include "sdk/credit_split.hpp"
#include "sdk/ws_url.hpp"

namespace {

using namespace std::chrono_literals;
using namespace outboxd::sdk::detail;
using Shares = std::vector<std::int32_t>;
using Loads = std::vector<ConnectionLoad>;

Shares shares(std::int32_t total, const Loads& loads, Elsewhere elsewhere = {}) {
    return split_credits(total, loads, elsewhere).shares;
}

// The even split: no demand, credit or tasks anywhere.
Shares even(std::int32_t total, std::size_t connections) {
    return shares(total, Loads(connections));
}

}  // namespace

TEST_CASE("ws and wss URLs are split into host, port, authority and target", "[sdk][unit]") {
    const auto plain = parse_ws_url("ws://127.0.0.1:8080/v1/workers");
    REQUIRE(plain);
    CHECK(plain->host == "127.0.0.1");
    CHECK(plain->port == "8080");
    CHECK(plain->authority == "127.0.0.1:8080");
    CHECK(plain->target == "/v1/workers");

    const auto bare = parse_ws_url("ws://node-a");
    REQUIRE(bare);
    CHECK(bare->port == "80");
    CHECK(bare->target == "/");

    const auto v6 = parse_ws_url("ws://[::1]:9/v1/workers?token=x");
    REQUIRE(v6);
    CHECK(v6->host == "::1");
    CHECK(v6->authority == "[::1]:9");
    CHECK(v6->target == "/v1/workers?token=x");

    CHECK(parse_ws_url("ws://h?x=1")->target == "/?x=1");
    const auto secure = parse_ws_url("wss://127.0.0.1/v1/workers");
    REQUIRE(secure);
    CHECK(secure->tls);
    CHECK(secure->port == "443");
    CHECK_FALSE(plain->tls);
    CHECK_FALSE(parse_ws_url("wss://"));
    CHECK_FALSE(parse_ws_url("http://127.0.0.1/v1/workers"));
    CHECK_FALSE(parse_ws_url("ws://"));
    CHECK_FALSE(parse_ws_url("ws://:80/x"));
    CHECK_FALSE(parse_ws_url("ws://h:0/x"));
    CHECK_FALSE(parse_ws_url("ws://h:65536/x"));
    CHECK_FALSE(parse_ws_url("ws://h:8o/x"));
    CHECK_FALSE(parse_ws_url("ws://user@h/x"));
    CHECK_FALSE(parse_ws_url("ws://[::1/x"));
}

TEST_CASE("credits are split evenly, remainder first, at least one each", "[sdk][unit]") {
    CHECK(even(16, 0) == Shares{});
    CHECK(even(16, 1) == Shares{16});
    CHECK(even(11, 2) == Shares{6, 5});
    CHECK(even(10, 3) == Shares{4, 3, 3});
    CHECK(even(2, 3) == Shares{1, 1, 1});
    CHECK(even(10000, 1) == Shares{10000});
}

TEST_CASE("equal demand keeps the even split", "[sdk][unit]") {
    CHECK(shares(12, Loads{{0, 4, 0}, {0, 4, 0}, {0, 4, 0}}) == Shares{4, 4, 4});
    // Idle alike, or with a backlog alike (each asking twice its credit): even, remainder first.
    CHECK(shares(11, Loads{{6, 0, 0}, {5, 0, 0}}) == Shares{6, 5});
    CHECK(shares(11, Loads{{6, 11, 6}, {5, 10, 5}}) == Shares{6, 5});
    // A raise waits until the node of a lowered credit can have read it (reserved says so).
    CHECK(shares(10, Loads{{7, 0.5, 7}, {3, 0.5, 3}}) == Shares{5, 3});
    CHECK(shares(10, Loads{{5, 0.5, 5}, {3, 0.5, 3}}) == Shares{5, 5});
    // Light but unequal use leaves a surplus, which goes to the smallest shares first.
    CHECK(shares(10, Loads{{5, 3, 2}, {5, 0, 0}}) == Shares{5, 5});
}

TEST_CASE("a fresh connection starts at an even share, once the window has room", "[sdk][unit]") {
    // Its demand is seeded with an even share, whatever the others ask; its hello waits
    // until the credit it is to take is free.
    const auto waits = split_credits(10, Loads{{10, 10, 10}, {0, 5, 0}});
    CHECK(waits.shares == Shares{5, 0});
    CHECK(waits.waiting);
    const auto goes = split_credits(10, Loads{{5, 10, 5}, {0, 5, 0}});
    CHECK(goes.shares == Shares{5, 5});
    CHECK_FALSE(goes.waiting);
    CHECK(shares(10, Loads{{5, 0, 0}, {0, 5, 0}}) == Shares{5, 5});
    CHECK(shares(12, Loads{{11, 12, 0}, {1, 0, 0}, {0, 4, 0}}) == Shares{7, 1, 0});
    CHECK(shares(12, Loads{{7, 12, 0}, {1, 0, 0}, {0, 4, 0}}) == Shares{7, 1, 4});
}

TEST_CASE("a busy connection gets all but the floors of the idle ones", "[sdk][unit]") {
    CHECK(shares(10, Loads{{4, 8, 4}, {3, 0, 0}, {3, 0, 0}}) == Shares{4, 1, 1});
    CHECK(shares(10, Loads{{4, 8, 4}, {1, 0, 0}, {1, 0, 0}}) == Shares{8, 1, 1});
    CHECK(shares(10, Loads{{1, 0, 0}, {4, 10, 4}, {1, 0.2, 0}}) == Shares{1, 8, 1});
    // Partly idle: the busy one gets what the other does not ask for.
    CHECK(shares(16, Loads{{8, 16, 8}, {8, 3, 2}}) == Shares{8, 3});
    CHECK(shares(16, Loads{{8, 16, 8}, {3, 3, 2}}) == Shares{13, 3});
}

TEST_CASE("credit and tasks never sum past the window, but for one per connection", "[sdk][unit]") {
    std::mt19937 random{7};
    const auto uniform = [&random](int low, int high) {
        return std::uniform_int_distribution<int>{low, high}(random);
    };
    for (int round = 0; round < 2000; ++round) {
        const auto total = uniform(1, 40);
        const auto n = static_cast<std::size_t>(uniform(1, 6));
        const std::int64_t bound = std::max<std::int64_t>(total, static_cast<std::int64_t>(n));
        Loads loads(n);
        Elsewhere elsewhere;
        if (uniform(0, 3) == 0) elsewhere = {uniform(1, total), 1};  // a draining connection
        std::int64_t before = elsewhere.reserved;  // what the connections take before the call
        for (auto& load : loads) {
            load.credit = uniform(0, 3) == 0 ? 0 : uniform(1, total);
            load.reserved = load.credit == 0 ? 0 : uniform(0, load.credit + 2);
            load.demand = uniform(0, 2 * total) / 2.0;
            before += std::max(load.credit, load.reserved);
        }
        const auto split = split_credits(total, loads, elsewhere);
        REQUIRE(split.shares.size() == n);
        std::int64_t sum = 0;
        std::int64_t taken = elsewhere.reserved;
        std::int64_t holding = elsewhere.holding;
        for (std::size_t i = 0; i < n; ++i) {
            CHECK(split.shares[i] >= (loads[i].credit > 0 ? 1 : 0));
            sum += split.shares[i];
            const auto share_taken =
                std::max({split.shares[i], loads[i].credit, loads[i].reserved});
            taken += share_taken;
            if (share_taken > 0) ++holding;
        }
        CHECK(sum <= bound);
        // Raises take only room that is free: past the window by one per connection at most,
        // and never past what was taken before.
        CHECK(taken <= std::max<std::int64_t>(before, std::max<std::int64_t>(total, holding)));
    }
    CHECK(shares(2, Loads{{1, 9, 1}, {1, 9, 1}, {0, 1, 0}}) == Shares{1, 1, 1});
    CHECK(shares(2, Loads{{1, 9, 2}, {0, 9, 0}, {0, 1, 0}}) == Shares{1, 0, 0});
}

TEST_CASE("small changes of share are not worth a credit frame", "[sdk][unit]") {
    // Less than 2 credits and at most 10%: kept.
    CHECK(shares(40, Loads{{20, 21, 0}, {20, 19, 0}}) == Shares{20, 20});
    CHECK(shares(40, Loads{{30, 29, 0}, {10, 11, 0}}) == Shares{30, 10});
    // 2 credits, or more than 10%: moved (a raise once the lowered credit is released).
    CHECK(shares(40, Loads{{20, 22, 0}, {20, 18, 0}}) == Shares{20, 18});
    CHECK(shares(40, Loads{{20, 22, 0}, {18, 18, 0}}) == Shares{22, 18});
    CHECK(shares(8, Loads{{4, 5, 0}, {3, 3, 0}}) == Shares{5, 3});
    // A decrease held back is given up when keeping it would push the sum past the total.
    CHECK(shares(40, Loads{{30, 29, 0}, {5, 6, 0}, {5, 5, 0}}) == Shares{29, 5, 5});
    CHECK(shares(40, Loads{{29, 29, 0}, {5, 6, 0}, {5, 5, 0}}) == Shares{29, 6, 5});
    // A fresh connection gets its share where the window has room for it.
    CHECK(shares(40, Loads{{20, 20, 0}, {0, 20, 0}}) == Shares{20, 20});
}

TEST_CASE("raises wait for the tasks a shrunk connection still holds", "[sdk][unit]") {
    CHECK(shares(10, Loads{{9, 10, 9}, {1, 10, 1}}) == Shares{5, 1});
    CHECK(shares(10, Loads{{5, 10, 7}, {1, 10, 1}}) == Shares{5, 3});
    CHECK(shares(10, Loads{{5, 10, 3}, {3, 10, 3}}) == Shares{5, 5});
    // A hello waits for room too.
    CHECK(shares(10, Loads{{10, 10, 10}, {0, 5, 0}}) == Shares{5, 0});
    // Connections outside the split (draining) take their part of the window.
    CHECK(shares(10, Loads{{5, 10, 5}}, Elsewhere{3, 1}) == Shares{7});
}

TEST_CASE("demand doubles under a backlog and decays when idle", "[sdk][unit]") {
    IntervalLoad full;
    full.credit = 4;
    full.full_fraction = 0.8;
    full.mean_in_flight = 3.9;
    CHECK(next_demand(4, full, 16) == Approx(8));
    CHECK(next_demand(4, full, 6) == Approx(6));  // never past the total

    IntervalLoad turned_over;  // fast tasks: rarely full, but refilled again and again
    turned_over.credit = 4;
    turned_over.received = 5;
    turned_over.mean_in_flight = 0.2;
    CHECK(next_demand(1, turned_over, 16) == Approx(8));
    IntervalLoad at_floor;
    at_floor.credit = 1;
    at_floor.received = 2;
    CHECK(next_demand(1, at_floor, 16) == Approx(2));

    IntervalLoad light;  // one burst of exactly its credit, answered quickly
    light.credit = 4;
    light.received = 4;
    light.full_fraction = 0.2;
    light.mean_in_flight = 2;
    CHECK(next_demand(4, light, 16) == Approx(3.5));  // halfway from 4 towards 2 * 1.5
    CHECK(next_demand(1, light, 16) == Approx(3));    // a larger ask counts at once

    IntervalLoad idle;
    idle.credit = 8;
    double demand = 8;
    for (const double expected : {4.0, 2.0, 1.0, 0.5}) {
        demand = next_demand(demand, idle, 16);
        CHECK(demand == Approx(expected));
    }
}

TEST_CASE("the load meter integrates tasks in flight and time at a full window", "[sdk][unit]") {
    using Clock = LoadMeter::Clock;
    const Clock::time_point t0{};
    LoadMeter meter;
    meter.restart(t0);
    // Credit 2: one task for 100 ms, two (full) for 300 ms, none for the last 100 ms.
    meter.advance(t0, 0, 2);
    meter.count_received();
    meter.advance(t0 + 100ms, 1, 2);
    meter.count_received();
    meter.advance(t0 + 400ms, 2, 2);
    const auto load = meter.take(t0 + 500ms, 0, 2);
    CHECK(load.credit == 2);
    CHECK(load.received == 2);
    CHECK(load.full_fraction == Approx(0.6));
    CHECK(load.mean_in_flight == Approx(1.4));
    // The next interval starts where that one ended.
    CHECK(meter.elapsed(t0 + 500ms) == Clock::duration::zero());
    const auto next = meter.take(t0 + 600ms, 1, 2);
    CHECK(next.received == 0);
    CHECK(next.mean_in_flight == Approx(1));
}

TEST_CASE("rebalancing moves credit to a backlog and back, then holds still", "[sdk][unit]") {
    // The client's loop, on paper: node A refills its window again and again, B sends nothing.
    constexpr std::int32_t kTotal = 10;
    Shares credits{5, 5};
    std::vector<double> demand{5, 5};
    const auto tick = [&](bool b_busy) {
        for (std::size_t i = 0; i < 2; ++i) {
            IntervalLoad load;
            load.credit = credits[i];
            if (i == 0 || b_busy) load.received = 10 * static_cast<std::uint64_t>(credits[i]);
            demand[i] = next_demand(demand[i], load, kTotal);
        }
        // Each interval, the nodes have read the credits of the one before.
        const auto next = shares(kTotal, Loads{{credits[0], demand[0], credits[0]},
                                               {credits[1], demand[1], credits[1]}});
        const bool changed = next != credits;
        credits = next;
        return changed;
    };
    int rounds = 0;
    while (credits != Shares{9, 1} && rounds < 10) {
        (void)tick(false);
        ++rounds;
    }
    CHECK(credits == Shares{9, 1});
    CHECK(rounds <= 3);
    for (int i = 0; i < 10; ++i) CHECK_FALSE(tick(false));

    // B gets work: squeezed to the floor, it still shows its backlog and climbs back.
    rounds = 0;
    while (credits != Shares{5, 5} && rounds < 10) {
        (void)tick(true);
        ++rounds;
    }
    CHECK(credits == Shares{5, 5});
    // Slower than the way out: each raise of B waits an interval for A's node to have read
    // A's lowered credit.
    CHECK(rounds <= 6);
    for (int i = 0; i < 10; ++i) CHECK_FALSE(tick(true));
}

TEST_CASE("backoff grows from min to max with bounded jitter and resets", "[sdk][unit]") {
    outboxd::util::RetryBackoff backoff{100ms, 1000ms, 42};
    std::set<std::int64_t> at_cap;
    for (int i = 0; i < 40; ++i) {
        const auto delay = backoff.next();
        CHECK(delay >= 100ms);
        CHECK(delay <= 1000ms);
        const auto ceiling = std::min(100ms * (1 << std::min(i, 10)), 1000ms);
        CHECK(delay <= ceiling);
        CHECK(delay >= std::max(ceiling / 2, 100ms));
        if (i >= 10) at_cap.insert(delay.count());
    }
    // Capped delays still spread out.
    CHECK(at_cap.size() > 10);
    backoff.reset();
    CHECK(backoff.next() <= 100ms);

    outboxd::util::RetryBackoff same{100ms, 1000ms, 42};
    outboxd::util::RetryBackoff again{100ms, 1000ms, 42};
    for (int i = 0; i < 5; ++i) CHECK(same.next() == again.next());
}

TEST_CASE("cluster plans connect new nodes and drop unlisted non-seeds", "[sdk][unit]") {
    const std::vector<KnownNode> known{
        {"ws://seed:1/w", std::string{"a"}, true, true},
        {"ws://b:1/w", std::string{"b"}, false, true},
        {"ws://c:1/w", std::nullopt, false, false},
    };
    const auto plan = plan_cluster(known, {{"a", "ws://a-advertised:1/w"},
                                           {"c", "ws://c:1/w"},
                                           {"d", "ws://d:1/w"},
                                           {"d", "ws://d:1/w"}});
    // a is the seed under another name; c is known by URL; d is new (listed twice).
    REQUIRE(plan.connect.size() == 1);
    CHECK(plan.connect[0].url == "ws://d:1/w");
    CHECK(plan.drop == std::vector<std::string>{"ws://b:1/w"});

    const auto seeds_stay = plan_cluster(known, {{"z", "ws://z:1/w"}});
    CHECK(seeds_stay.drop == std::vector<std::string>{"ws://b:1/w", "ws://c:1/w"});
}

TEST_CASE("a node that restarted on another URL is followed there", "[sdk][unit]") {
    // Both links lost their connection: the node came back elsewhere (a new port).
    const std::vector<KnownNode> known{
        {"ws://seed:1/w", std::string{"a"}, true, false},
        {"ws://b:1000/w", std::string{"b"}, false, false},
    };
    const auto plan = plan_cluster(known, {{"a", "ws://a:2000/w"}, {"b", "ws://b:2000/w"}});
    REQUIRE(plan.connect.size() == 2);
    CHECK(plan.connect[0].url == "ws://a:2000/w");
    CHECK(plan.connect[1].url == "ws://b:2000/w");
    // The learned link is dropped; the seed is kept (it may come back under its name).
    CHECK(plan.drop == std::vector<std::string>{"ws://b:1000/w"});
}
