// PUT /v1/namespaces/{ns} bodies with delivery controls (README, "Delivery controls"):
// parsed into settings, or refused naming the field.

#include <variant>

#include <catch2/catch.hpp>

#include "http/row_parser.hpp"

namespace outboxd {
namespace {

store::NamespaceSettings parsed(const std::string& body) {
    auto result = http::parse_namespace_request("orders", body);
    if (const auto* error = std::get_if<http::RowError>(&result)) FAIL(error->message);
    return std::get<store::NamespaceSettings>(result);
}

std::string refusal(const std::string& body) {
    const auto result = http::parse_namespace_request("orders", body);
    const auto* error = std::get_if<http::RowError>(&result);
    REQUIRE(error != nullptr);
    return error->message;
}

}  // namespace

TEST_CASE("a namespace body without controls leaves them at their defaults", "[unit][http]") {
    const auto s = parsed(R"({"weight":2})");
    CHECK(s.controls == store::DeliveryControls{});
    CHECK(s.controls.ordering == store::Ordering::none);
    CHECK(s.controls.on_dead_letter == store::OnDeadLetter::block);
}

TEST_CASE("every delivery control is parsed", "[unit][http]") {
    const auto s = parsed(
        R"({"ordering":"workflow","on_dead_letter":"skip","rate_limit":{"per_second":2.5,"burst":4},)"
        R"("activities":{"charge":{"max_in_flight":5},"email":{"rate_limit":{"per_second":20,"burst":5}}}})");
    CHECK(s.controls.ordering == store::Ordering::workflow);
    CHECK(s.controls.on_dead_letter == store::OnDeadLetter::skip);
    REQUIRE(s.controls.rate_limit);
    CHECK(s.controls.rate_limit->per_second == 2.5);
    CHECK(s.controls.rate_limit->burst == 4);
    REQUIRE(s.controls.activities.size() == 2);
    CHECK(s.controls.activities.at("charge").max_in_flight == 5);
    CHECK_FALSE(s.controls.activities.at("charge").rate_limit);
    CHECK(s.controls.activities.at("email").rate_limit->per_second == 20);
    // Without a burst: a second's worth of tokens.
    CHECK(parsed(R"({"rate_limit":{"per_second":7.5}})").controls.rate_limit->burst == 8);
}

TEST_CASE("bad delivery controls are refused, naming the field", "[unit][http]") {
    CHECK_THAT(refusal(R"({"ordering":"fifo"})"), Catch::Contains("'ordering'"));
    CHECK_THAT(refusal(R"({"ordering":3})"), Catch::Contains("ordering"));
    CHECK_THAT(refusal(R"({"on_dead_letter":"drop"})"), Catch::Contains("'on_dead_letter'"));
    CHECK_THAT(refusal(R"({"rate_limit":{"per_second":0,"burst":1}})"),
               Catch::Contains("per_second"));
    CHECK_THAT(refusal(R"({"rate_limit":{"per_second":1e9,"burst":1}})"),
               Catch::Contains("per_second"));
    CHECK_THAT(refusal(R"({"rate_limit":{"per_second":5,"burst":0}})"), Catch::Contains("burst"));
    CHECK_THAT(refusal(R"({"rate_limit":{"per_second":5,"burst":1,"x":1}})"), Catch::Contains("x"));
    CHECK_THAT(refusal(R"({"activities":[1]})"), Catch::Contains("'activities'"));
    CHECK_THAT(refusal(R"({"activities":{"charge":{"max_in_flight":0}}})"),
               Catch::Contains("charge.max_in_flight"));
    CHECK_THAT(refusal(R"({"activities":{"charge":{"max_in_flight":2.5}}})"),
               Catch::Contains("charge.max_in_flight"));
    CHECK_THAT(refusal(R"({"activities":{"charge":{"speed":1}}})"), Catch::Contains("speed"));
    CHECK_THAT(refusal(R"({"activities":{"charge":3}})"), Catch::Contains("charge"));
    CHECK_THAT(refusal(R"({"activities":{"":{"max_in_flight":1}}})"),
               Catch::Contains("activity type"));
    CHECK_THAT(refusal(R"({"activities":{"*":{"max_in_flight":1}}})"), Catch::Contains("*"));
}
}  // namespace outboxd
