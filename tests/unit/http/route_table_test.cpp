// The API's route table: which route answers a path and method, with what parameters, and
// who may call it.

#include <catch2/catch.hpp>

#include "http/route_table.hpp"

using namespace outboxd::http;

namespace {

RouteTable table() {
    RouteTable t;
    const auto none = [](const RouteRequest&, const Respond&) {};
    t.add({"GET", "/healthz", Access::open, none});
    t.add({"GET", "/v1/cluster", Access::worker, none});
    t.add({"GET", "/v1/outbox/{key}", Access::admin, none});
    t.add({"GET", "/v1/namespaces/{ns}", Access::admin, none});
    t.add({"PUT", "/v1/namespaces/{ns}", Access::admin, none});
    t.add({"POST", "/v1/dead-letters/requeue", Access::admin, none});
    t.add({"POST", "/v1/dead-letters/{key}/requeue", Access::admin, none});
    t.add({"GET", "/ui/{file...}", Access::open, none});
    return t;
}

}  // namespace

TEST_CASE("a route matches its literal segments and hands over its parameters", "[unit][http]") {
    const auto t = table();
    auto found = t.find("GET", {"v1", "outbox", "order-42:0"}, Access::admin);
    REQUIRE(found.route);
    CHECK(found.route->pattern == "/v1/outbox/{key}");
    CHECK(found.params == std::vector<std::string>{"order-42:0"});
    CHECK(found.access == Access::admin);

    // A literal route and a parameter route of different lengths never meet.
    found = t.find("POST", {"v1", "dead-letters", "requeue"}, Access::admin);
    REQUIRE(found.route);
    CHECK(found.route->pattern == "/v1/dead-letters/requeue");
    found = t.find("POST", {"v1", "dead-letters", "requeue", "requeue"}, Access::admin);
    REQUIRE(found.route);
    CHECK(found.params == std::vector<std::string>{"requeue"});
}

TEST_CASE("a rest parameter takes any number of segments, none included", "[unit][http]") {
    const auto t = table();
    CHECK(t.find("GET", {"ui"}, Access::open).params.empty());
    CHECK(t.find("GET", {"ui", "app.js"}, Access::open).params ==
          std::vector<std::string>{"app.js"});
    CHECK(t.find("GET", {"ui", "a", "b"}, Access::open).params ==
          std::vector<std::string>{"a", "b"});
}

TEST_CASE("a path without the method lists the methods it takes, for a 405", "[unit][http]") {
    const auto t = table();
    const auto found = t.find("DELETE", {"v1", "namespaces", "billing"}, Access::admin);
    CHECK(found.route == nullptr);
    CHECK(found.methods == std::vector<std::string>{"GET", "PUT"});
    CHECK(found.access == Access::admin);
}

TEST_CASE("who may call a path comes from its routes, or from the caller for an unknown one",
          "[unit][http]") {
    const auto t = table();
    CHECK(t.find("GET", {"healthz"}, Access::admin).access == Access::open);
    CHECK(t.find("GET", {"v1", "cluster"}, Access::admin).access == Access::worker);
    // Any method of a path some route takes: the strictest of them (decided before a body).
    CHECK(t.find("", {"v1", "cluster"}, Access::admin).access == Access::worker);
    const auto unknown = t.find("GET", {"v1", "nothing"}, Access::admin);
    CHECK(unknown.route == nullptr);
    CHECK(unknown.methods.empty());
    CHECK(unknown.access == Access::admin);
    CHECK(t.find("GET", {"elsewhere"}, Access::open).access == Access::open);
}
