#include <catch2/catch.hpp>

#include "http/api_types.hpp"

using outboxd::http::parse_target;
using outboxd::http::ParsedTarget;
using outboxd::http::TargetError;

namespace {

std::string error_of(std::string_view target) {
    const auto parsed = parse_target(target);
    const auto* error = std::get_if<TargetError>(&parsed);
    return error ? error->message : std::string{"(parsed)"};
}

}  // namespace

TEST_CASE("a request target splits into decoded segments and query parameters", "[http]") {
    const auto parsed = parse_target("/v1/outbox/a%2Fb//x?limit=5&state=a+b&=ignored&flag");
    const auto* target = std::get_if<ParsedTarget>(&parsed);
    REQUIRE(target);
    CHECK(target->segments == std::vector<std::string>{"v1", "outbox", "a/b", "x"});
    CHECK(target->query.at("limit") == "5");
    CHECK(target->query.at("state") == "a b");
    CHECK(target->query.at("flag").empty());
    CHECK(target->query.size() == 3);

    // Empty segments collapse: "//metrics/" names /metrics, as every route does.
    const auto doubled = parse_target("//metrics/");
    REQUIRE(std::holds_alternative<ParsedTarget>(doubled));
    CHECK(std::get<ParsedTarget>(doubled).segments == std::vector<std::string>{"metrics"});
}

TEST_CASE("a request target that is not a path is refused, not routed", "[http]") {
    // "GET metrics" once answered as "GET /metrics" (found by the api_router fuzzer).
    CHECK(error_of("metrics").find("starting with '/'") != std::string::npos);
    CHECK(error_of("").find("starting with '/'") != std::string::npos);
    CHECK(error_of("*").find("starting with '/'") != std::string::npos);
    CHECK(error_of("http://example.com/metrics").find("starting with '/'") != std::string::npos);
    CHECK(error_of("?x=1").find("starting with '/'") != std::string::npos);
    CHECK(std::holds_alternative<ParsedTarget>(parse_target("/")));
}

TEST_CASE("a request target with bad encoding says which part is wrong", "[http]") {
    CHECK(error_of("/v1/%zz") == "malformed percent-encoding in the URL path");
    CHECK(error_of("/v1/a%00b") == "the URL path holds a NUL byte");
    CHECK(error_of("/v1/%ff") == "the URL path is not valid UTF-8");
    CHECK(error_of("/v1?x=%4") == "malformed percent-encoding in the URL query parameter 'x'");
    CHECK(error_of("/v1?%4=x") == "malformed percent-encoding in the URL query");
    CHECK(error_of("/v1?database=a%00b") == "the URL query parameter 'database' holds a NUL byte");
    CHECK(error_of("/v1?database=%ff") == "the URL query parameter 'database' is not valid UTF-8");
    // A hostile name is echoed cut short and printable.
    CHECK(error_of("/v1?" + std::string(10000, 'k') + "=%00").size() < 200);
}

TEST_CASE("a query parameter given twice keeps its last value and is marked", "[http]") {
    const auto parsed = parse_target("/v1/dead-letters?database=a&limit=5&database=b&x=1&x=1");
    const auto* target = std::get_if<ParsedTarget>(&parsed);
    REQUIRE(target);
    CHECK(target->query.at("database") == "b");
    CHECK(target->repeated == std::set<std::string>{"database", "x"});
    const auto once = std::get<ParsedTarget>(parse_target("/v1?database=a&limit=5"));
    CHECK(once.repeated.empty());
}
