// Pure pieces of the SDK: URL parsing, the credit split, reconnect backoff, cluster plans.

#include <catch2/catch.hpp>

// Internal headers: not part of the public include tree.
#include "sdk/backoff.hpp"
#include "sdk/cluster_plan.hpp"
#include "sdk/credit_split.hpp"
#include "sdk/ws_url.hpp"

namespace {

using namespace std::chrono_literals;
using namespace outboxd::sdk::detail;
using Shares = std::vector<std::int32_t>;

}  // namespace

TEST_CASE("ws URLs are split into host, port, authority and target", "[sdk][unit]") {
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
    CHECK_FALSE(parse_ws_url("wss://127.0.0.1/v1/workers"));
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
    CHECK(split_credits(16, 0) == Shares{});
    CHECK(split_credits(16, 1) == Shares{16});
    CHECK(split_credits(11, 2) == Shares{6, 5});
    CHECK(split_credits(10, 3) == Shares{4, 3, 3});
    CHECK(split_credits(2, 3) == Shares{1, 1, 1});
    CHECK(split_credits(10000, 1) == Shares{10000});
}

TEST_CASE("backoff grows from min to max with bounded jitter and resets", "[sdk][unit]") {
    Backoff backoff{100ms, 1000ms, 42};
    auto previous_floor = 0ms;
    for (int i = 0; i < 12; ++i) {
        const auto delay = backoff.next();
        CHECK(delay >= 100ms);
        CHECK(delay <= 1000ms);
        const auto floor = std::min(100ms * (1 << std::min(i, 10)), 1000ms);
        CHECK(delay >= floor);
        CHECK(floor >= previous_floor);
        previous_floor = floor;
    }
    CHECK(backoff.next() >= 1000ms);
    backoff.reset();
    CHECK(backoff.next() <= 150ms);

    Backoff same{100ms, 1000ms, 42};
    Backoff again{100ms, 1000ms, 42};
    for (int i = 0; i < 5; ++i) CHECK(same.next() == again.next());
}

TEST_CASE("cluster plans connect new nodes and drop unlisted non-seeds", "[sdk][unit]") {
    const std::vector<KnownNode> known{
        {"ws://seed:1/w", std::string{"a"}, true},
        {"ws://b:1/w", std::string{"b"}, false},
        {"ws://c:1/w", std::nullopt, false},
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
