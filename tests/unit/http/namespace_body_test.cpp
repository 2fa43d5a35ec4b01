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
TEST_CASE("hostile delivery controls are refused, never taken or crashed on", "[unit][http]") {
    // NUL, invalid UTF-8 and a 1 MB name as an activity type.
    CHECK_THAT(refusal(std::string{R"({"activities":{"a)"} + std::string{"\\u0000"} +
                       R"(b":{"max_in_flight":1}}})"),
               Catch::Contains("activity type"));
    CHECK_FALSE(
        refusal(std::string{R"({"activities":{")"} + "\xff\xfe" + R"(":{"max_in_flight":1}}})")
            .empty());
    CHECK_THAT(
        refusal(R"({"activities":{")" + std::string(1 << 20, 'a') + R"(":{"max_in_flight":1}}})"),
        Catch::Contains("activity type"));
    // Strings where tokens belong.
    CHECK_THAT(refusal(R"({"ordering":")" + std::string(1 << 20, 'w') + R"("})"),
               Catch::Contains("'ordering'"));
    // Huge numbers.
    CHECK_THAT(refusal(R"({"activities":{"charge":{"max_in_flight":1e30}}})"),
               Catch::Contains("max_in_flight"));
    CHECK_THAT(refusal(R"({"activities":{"charge":{"max_in_flight":18446744073709551615}}})"),
               Catch::Contains("max_in_flight"));
    CHECK_THAT(refusal(R"({"rate_limit":{"per_second":1e308,"burst":1}})"),
               Catch::Contains("per_second"));
    CHECK_THAT(refusal(R"({"rate_limit":{"per_second":1e-320,"burst":1}})"),
               Catch::Contains("per_second"));
    CHECK_THAT(refusal(R"({"rate_limit":{"per_second":5,"burst":9223372036854775807}})"),
               Catch::Contains("burst"));
    // More activity types than allowed, and 10,000 levels of nesting.
    std::string many = R"({"activities":{)";
    for (int i = 0; i <= 1000; ++i) {
        many +=
            (i ? "," : "") + std::string{"\"t"} + std::to_string(i) + R"(":{"max_in_flight":1})";
    }
    CHECK_THAT(refusal(many + "}}"), Catch::Contains("at most"));
    const std::string deep =
        R"({"activities":{"charge":)" + std::string(10000, '[') + std::string(10000, ']') + "}}";
    CHECK_THAT(refusal(deep), Catch::Contains("nest"));
}

TEST_CASE("a staged row's priority is an integer within its bounds", "[unit][http]") {
    const auto stage = [](const std::string& priority) {
        return http::parse_stage_request(
            R"({"rows":[{"workflow_id":"w","ordinal":0,"activity_type":"a","priority":)" +
                priority + "}]}",
            10);
    };
    const auto ok = stage("100");
    REQUIRE(std::holds_alternative<std::vector<store::NewRow>>(ok));
    CHECK(std::get<std::vector<store::NewRow>>(ok)[0].priority == 100);
    for (const char* bad :
         {"101", "-1", "1e20", "18446744073709551615", "2.5", "\"7\"", "true", "[1]"}) {
        INFO(bad);
        const auto refused = stage(bad);
        REQUIRE(std::holds_alternative<http::RowError>(refused));
        CHECK_THAT(std::get<http::RowError>(refused).message, Catch::Contains("priority"));
    }
}

}  // namespace outboxd
