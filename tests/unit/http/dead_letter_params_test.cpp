// The dead-letter routes' filters, limits and cursors against hostile input: each bad value is
// refused with a message naming the parameter, and nothing else is taken from the request.

#include <catch2/catch.hpp>

#include "http/dead_letter_params.hpp"

using namespace outboxd;
using http::DeadLetterBulk;
using http::DeadLetterQuery;

namespace {

std::string query_error(const std::map<std::string, std::string>& query) {
    const auto parsed = http::parse_dead_letter_query(query, 1000);
    const auto* error = std::get_if<std::string>(&parsed);
    return error ? *error : std::string{};
}

std::string bulk_error(const std::string& body) {
    const auto parsed = http::parse_dead_letter_bulk(body);
    const auto* error = std::get_if<std::string>(&parsed);
    return error ? *error : std::string{};
}

}  // namespace

TEST_CASE("dead-letter filters refuse NUL, bad UTF-8, huge numbers, megabytes and deep nesting",
          "[unit][http]") {
    const std::string nul{"ns\0x", 4};
    const std::string bad_utf8 = "\xff\xfe";
    const std::string megabyte(1 << 20, 'a');
    for (const char* key : {"namespace", "activity_type", "error"}) {
        INFO(key);
        CHECK_THAT(query_error({{key, nul}}), Catch::Contains(key) && Catch::Contains("NUL"));
        CHECK_THAT(query_error({{key, bad_utf8}}), Catch::Contains("UTF-8"));
        CHECK_THAT(query_error({{key, megabyte}}), Catch::Contains("longer than"));
    }
    CHECK_THAT(query_error({{"older_than_s", "99999999999999999999999"}}),
               Catch::Contains("older_than_s"));
    CHECK_THAT(query_error({{"older_than_s", "1e9"}}), Catch::Contains("older_than_s"));
    CHECK_THAT(query_error({{"limit", "99999999999999999999999"}}), Catch::Contains("limit"));
    CHECK_THAT(query_error({{"after", "99999999999999999999999.1"}}), Catch::Contains("after"));
    CHECK_THAT(query_error({{"after", "1.-5"}}), Catch::Contains("after"));
    CHECK_THAT(query_error({{"after", std::string{"1.2\0", 4}}}), Catch::Contains("after"));

    const std::string deep = std::string(10000, '[') + std::string(10000, ']');
    CHECK_THAT(bulk_error(deep), Catch::Contains("deep"));
    CHECK_THAT(bulk_error(R"({"limit": 18446744073709551615})"), Catch::Contains("limit"));
    CHECK_THAT(bulk_error(R"({"older_than_s": -9223372036854775808})"),
               Catch::Contains("older_than_s"));
    CHECK_THAT(bulk_error(R"({"older_than_s": 1e300})"), Catch::Contains("integer"));
    CHECK_THAT(bulk_error(R"({"namespace": "a\u0000b"})"), Catch::Contains("NUL"));
    CHECK_THAT(bulk_error(R"({"error_contains": ")" + megabyte + R"("})"),
               Catch::Contains("longer than"));
    CHECK_THAT(bulk_error("{\"activity_type\": \"\xff\"}"), Catch::Contains("JSON"));
    CHECK_THAT(bulk_error(R"({"namespace": ["x"]})"), Catch::Contains("string"));
}

TEST_CASE("dead-letter filters take what they are given, and a cursor round trips",
          "[unit][http]") {
    const auto parsed = http::parse_dead_letter_query(
        {{"namespace", "billing"}, {"error", "declined"}, {"older_than_s", "60"}, {"limit", "5"}},
        1000);
    const auto& query = std::get<DeadLetterQuery>(parsed);
    CHECK(query.filter.namespace_name == "billing");
    CHECK(query.filter.error_contains == "declined");
    CHECK(query.filter.older_than_s == 60);
    CHECK(query.limit == 5);
    const store::DeadLetterCursor cursor{
        store::TimePoint{std::chrono::microseconds{1700000000123456}}, 42};
    const auto back = http::decode_cursor(http::encode_cursor(cursor));
    REQUIRE(back);
    CHECK(back->failed_at == cursor.failed_at);
    CHECK(back->id == 42);
    const auto bulk = std::get<DeadLetterBulk>(http::parse_dead_letter_bulk(""));
    CHECK(bulk.limit == 1000);
    CHECK_FALSE(bulk.filter.namespace_name);
}
