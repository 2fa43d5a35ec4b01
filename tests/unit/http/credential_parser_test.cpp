// POST /v1/credentials bodies: hostile input is refused naming the field, never thrown.

#include <catch2/catch.hpp>

#include "http/credential_parser.hpp"

using namespace outboxd::http;

namespace {

const auto kNow = outboxd::store::TimePoint{std::chrono::seconds{1'700'000'000}};

std::string field_of(const std::string& body) {
    const auto parsed = parse_credential_request(body, kNow);
    const auto* error = std::get_if<CredentialBodyError>(&parsed);
    return error ? error->field : "<accepted>";
}

}  // namespace

TEST_CASE("a credential body: a good one, and hostile ones refused naming the field",
          "[unit][http][auth]") {
    const auto good = parse_credential_request(
        R"({"name":"bw","namespaces":["billing","*"],"roles":["worker","worker"],"nodes":["eu-1"],"expires_at":"2030-01-01T00:00:00Z"})",
        kNow);
    REQUIRE(std::holds_alternative<CredentialRequest>(good));
    const auto& request = std::get<CredentialRequest>(good);
    CHECK(request.namespaces == std::vector<std::string>{"*"});
    CHECK(request.roles == std::vector<std::string>{"worker"});

    const std::string tail = R"(,"roles":["worker"]})";
    // A NUL byte and invalid UTF-8 in a namespace; in the name.
    CHECK(field_of(R"({"name":"x","namespaces":["a\u0000b"])" + tail) == "namespaces");
    CHECK(field_of("{\"name\":\"x\",\"namespaces\":[\"\xff\xfe\"]" + tail) == "");
    CHECK(field_of(R"({"name":"a\u0000","namespaces":["a"])" + tail) == "name");
    // A huge number where a string goes, and one as expires_at.
    CHECK(field_of(R"({"name":"x","namespaces":[1e999])" + tail) != "<accepted>");
    CHECK(field_of(R"({"name":"x","namespaces":[123456789012345678901234567890])" + tail) ==
          "namespaces");
    CHECK(
        field_of(
            R"({"name":"x","namespaces":["a"],"roles":["worker"],"expires_at":99999999999999})") ==
        "expires_at");
    // A 1 MB string.
    const std::string big(1 << 20, 'a');
    CHECK(field_of(R"({"name":"x","namespaces":[")" + big + "\"]" + tail) == "namespaces");
    CHECK(field_of(R"({"name":")" + big + R"(","namespaces":["a"])" + tail) == "name");
    // 10,000 levels of nesting: refused before it is parsed.
    const std::string deep = std::string(10000, '[') + std::string(10000, ']');
    CHECK(field_of(R"({"name":"x","namespaces":)" + deep + tail) == "");
    // 1,001 namespaces.
    std::string many = R"({"name":"x","namespaces":[)";
    for (int i = 0; i <= 1000; ++i) many += (i ? ",\"n" : "\"n") + std::to_string(i) + "\"";
    CHECK(field_of(many + "]" + tail) == "namespaces");
}
