#include <catch2/catch.hpp>

#include "outboxd/dispatch/route_activity.hpp"

using outboxd::dispatch::RouteActivity;
using namespace std::chrono_literals;

namespace {

outboxd::worker::Route route(const std::string& ns, const std::string& queue = "default") {
    outboxd::worker::Route r;
    r.scope.namespace_name = ns;
    r.scope.task_queue = queue;
    r.capacity = 8;
    return r;
}

std::vector<std::string> names(const std::vector<outboxd::worker::Route>& routes) {
    std::vector<std::string> out;
    for (const auto& r : routes) out.push_back(r.scope.namespace_name + "/" + r.scope.task_queue);
    return out;
}

}  // namespace

TEST_CASE("a new claimer probes every route once, then claims only those with rows",
          "[unit][dispatch]") {
    RouteActivity activity;
    const RouteActivity::Clock::time_point t0{};
    std::vector routes{route("busy"), route("idle-1"), route("idle-2")};
    auto split = activity.split(routes, t0);
    CHECK(split.claim.empty());
    CHECK(names(split.probe) ==
          std::vector<std::string>{"busy/default", "idle-1/default", "idle-2/default"});
    activity.settled({route("busy").scope}, {}, t0);

    split = activity.split(routes, t0 + 1ms);
    CHECK(names(split.claim) == std::vector<std::string>{"busy/default"});
    CHECK(split.probe.empty());  // not looking everywhere: idle routes cost nothing
}

TEST_CASE("a short claim retires a route until a wake names it again", "[unit][dispatch]") {
    RouteActivity activity;
    const RouteActivity::Clock::time_point t0{};
    (void)activity.split({}, t0);  // the first look everywhere, with nothing to look at
    activity.woken({{"billing", "default"}}, t0);
    auto split = activity.split({route("billing"), route("billing", "slow"), route("other")}, t0);
    CHECK(names(split.claim) == std::vector<std::string>{"billing/default"});
    activity.settled({}, {route("billing").scope}, t0);
    CHECK_FALSE(activity.active(route("billing").scope));
    CHECK(activity.split({route("billing")}, t0 + 1ms).claim.empty());
    activity.woken({{"billing", "default"}}, t0 + 2ms);
    CHECK(activity.split({route("billing")}, t0 + 2ms).claim.size() == 1);
}

TEST_CASE("a wake for a route without free credit is kept until credit frees, for a while",
          "[unit][dispatch]") {
    RouteActivity activity;
    const RouteActivity::Clock::time_point t0{};
    (void)activity.split({}, t0);
    activity.woken({{"busy", "default"}}, t0);
    CHECK(activity.split({}, t0 + 1ms).claim.empty());  // every worker busy
    CHECK(activity.split({route("busy")}, t0 + 2s).claim.size() == 1);
    activity.settled({}, {route("busy").scope}, t0 + 2s);
    activity.woken({{"busy", "default"}}, t0 + 3s);
    (void)activity.split({}, t0 + 3s);
    CHECK(activity.split({route("busy")}, t0 + 10s).claim.empty());  // the poll's probe covers it
}

TEST_CASE("looking everywhere probes only the inactive routes, once per request",
          "[unit][dispatch]") {
    RouteActivity activity;
    const RouteActivity::Clock::time_point t0{};
    (void)activity.split({route("a")}, t0);
    activity.settled({route("a").scope}, {}, t0);
    activity.look_everywhere();
    const auto split = activity.split({route("a"), route("b")}, t0);
    CHECK(names(split.claim) == std::vector<std::string>{"a/default"});
    CHECK(names(split.probe) == std::vector<std::string>{"b/default"});
    CHECK_FALSE(activity.looking_everywhere());
    // Found and claimed in one round, but the claim came back short: not active.
    activity.settled({route("b").scope}, {route("b").scope}, t0);
    CHECK_FALSE(activity.active(route("b").scope));
}
