// PUT /v1/http-targets/{name} bodies (README, "HTTP push"): a signing secret left out is
// kept, null clears it, a string replaces it; what GET shows in place of a header value is not
// taken back as one.

#include <variant>

#include <catch2/catch.hpp>

#include "http/target_parser.hpp"

namespace outboxd {
namespace {

std::string body(const std::string& extra = "") {
    return R"({"activity_types":["charge"],"url":"https://hooks.example.com/x?t=1")" + extra + "}";
}

http::TargetRequest parsed(const std::string& text) {
    auto result = http::parse_target_request("hook", text, {});
    if (const auto* error = std::get_if<http::TargetBodyError>(&result)) FAIL(error->message);
    return std::get<http::TargetRequest>(std::move(result));
}

http::TargetBodyError refusal(const std::string& text) {
    const auto result = http::parse_target_request("hook", text, {});
    const auto* error = std::get_if<http::TargetBodyError>(&result);
    REQUIRE(error != nullptr);
    return *error;
}

}  // namespace

TEST_CASE("a target body without a signing secret keeps the stored one; null clears it",
          "[unit][http]") {
    const auto omitted = parsed(body());
    CHECK(omitted.signing_secret == store::SecretUpdate::keep);
    CHECK_FALSE(omitted.target.signing_secret);
    CHECK(omitted.target.url == "https://hooks.example.com/x?t=1");  // the node uses it whole

    const auto cleared = parsed(body(R"(,"signing_secret":null)"));
    CHECK(cleared.signing_secret == store::SecretUpdate::replace);
    CHECK_FALSE(cleared.target.signing_secret);

    const auto replaced = parsed(body(R"(,"signing_secret":"s3cret")"));
    CHECK(replaced.signing_secret == store::SecretUpdate::replace);
    CHECK(replaced.target.signing_secret == "s3cret");

    CHECK(refusal(body(R"(,"signing_secret":7)")).field == "signing_secret");
    CHECK(refusal(body(R"(,"signing_secret":"")")).field == "signing_secret");
}

TEST_CASE("a header value GET redacted is not taken back as the value", "[unit][http]") {
    const auto error = refusal(body(R"(,"headers":{"Authorization":"<redacted>"})"));
    CHECK(error.field == "headers");
    CHECK(error.message.find("Authorization") != std::string::npos);
    CHECK(parsed(body(R"(,"headers":{"Authorization":"Bearer t"})")).target.headers.size() == 1);
}

}  // namespace outboxd
