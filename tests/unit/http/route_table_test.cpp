// The API's route table: which route answers a path and method, with what parameters, and
// who may call it.

#include <catch2/catch.hpp>

#include "http/route_table.hpp"

using namespace outboxd::http;
using outboxd::auth::Role;

namespace {

RouteTable table() {
    RouteTable t;
    const auto none = [](const RouteRequest&, const Respond&) {};
    t.add({"GET", "/healthz", Access::anyone(), none});
    t.add({"GET", "/v1/cluster", Access::needs(Role::worker, Role::reader), none});
    t.add({"GET", "/v1/outbox/{key}", Access::needs(Role::reader), none});
    t.add({"GET", "/v1/namespaces/{ns}", Access::needs(Role::reader), none});
    t.add({"PUT", "/v1/namespaces/{ns}", Access::needs(Role::operator_), none});
    t.add({"POST", "/v1/dead-letters/requeue", Access::needs(Role::operator_), none});
    t.add({"POST", "/v1/dead-letters/{key}/requeue", Access::needs(Role::operator_), none});
    t.add({"GET", "/ui/{file...}", Access::anyone(), none});
    return t;
}

}  // namespace

TEST_CASE("a route matches its literal segments and hands over its parameters", "[unit][http]") {
    const auto t = table();
    auto found = t.find("GET", {"v1", "outbox", "order-42:0"}, Access::signed_in());
    REQUIRE(found.route);
    CHECK(found.route->pattern == "/v1/outbox/{key}");
    CHECK(found.params == std::vector<std::string>{"order-42:0"});
    CHECK(found.access == Access::needs(Role::reader));

    // A literal route and a parameter route of different lengths never meet.
    found = t.find("POST", {"v1", "dead-letters", "requeue"}, Access::signed_in());
    REQUIRE(found.route);
    CHECK(found.route->pattern == "/v1/dead-letters/requeue");
    found = t.find("POST", {"v1", "dead-letters", "requeue", "requeue"}, Access::signed_in());
    REQUIRE(found.route);
    CHECK(found.params == std::vector<std::string>{"requeue"});
}

TEST_CASE("a rest parameter takes any number of segments, none included", "[unit][http]") {
    const auto t = table();
    CHECK(t.find("GET", {"ui"}, Access::anyone()).params.empty());
    CHECK(t.find("GET", {"ui", "app.js"}, Access::anyone()).params ==
          std::vector<std::string>{"app.js"});
    CHECK(t.find("GET", {"ui", "a", "b"}, Access::anyone()).params ==
          std::vector<std::string>{"a", "b"});
}

TEST_CASE("a path without the method lists the methods it takes, for a 405", "[unit][http]") {
    const auto t = table();
    const auto found = t.find("DELETE", {"v1", "namespaces", "billing"}, Access::signed_in());
    CHECK(found.route == nullptr);
    CHECK(found.methods == std::vector<std::string>{"GET", "PUT"});
    // Answered to any credential (a 405), never to a client without one.
    CHECK(found.access == Access::signed_in());
}

TEST_CASE("who may call a path comes from its routes, or from the caller for an unknown one",
          "[unit][http]") {
    const auto t = table();
    CHECK(t.find("GET", {"healthz"}, Access::signed_in()).access == Access::anyone());
    CHECK(t.find("GET", {"v1", "cluster"}, Access::signed_in()).access ==
          Access::needs(Role::worker, Role::reader));
    const auto unknown = t.find("GET", {"v1", "nothing"}, Access::signed_in());
    CHECK(unknown.route == nullptr);
    CHECK(unknown.methods.empty());
    CHECK(unknown.access == Access::signed_in());
    CHECK(t.find("GET", {"elsewhere"}, Access::anyone()).access == Access::anyone());
}
