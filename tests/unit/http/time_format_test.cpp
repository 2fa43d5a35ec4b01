#include <catch2/catch.hpp>

#include "http/time_format.hpp"

using outboxd::http::format_rfc3339;
using outboxd::http::parse_rfc3339;

TEST_CASE("RFC 3339 instants round trip across every year PostgreSQL and the format share",
          "[unit][http]") {
    // Beyond 1677..2262 a nanosecond clock overflows: a far-future row came back as 1816,
    // due at once (found by the staging-body fuzzer).
    for (const char* text : {"0001-01-01T00:00:00.000000Z", "1677-09-21T00:12:43.000000Z",
                             "1970-01-01T00:00:00.000000Z", "2026-12-01T03:21:29.123456Z",
                             "2262-04-11T23:47:17.000000Z", "9999-12-31T23:59:59.999999Z"}) {
        INFO(text);
        const auto parsed = parse_rfc3339(text);
        REQUIRE(parsed);
        CHECK(format_rfc3339(*parsed) == text);
    }
    CHECK(parse_rfc3339("9999-12-31T23:59:59Z") > parse_rfc3339("2262-04-11T23:47:17Z"));
    CHECK(format_rfc3339(*parse_rfc3339("2030-01-01T02:00:00+02:00")) ==
          "2030-01-01T00:00:00.000000Z");
    CHECK_FALSE(parse_rfc3339("2030-13-01T00:00:00Z"));
    CHECK_FALSE(parse_rfc3339("tomorrow"));
    // Past either end of the years the format writes, once in UTC: refused, not written back
    // as another text.
    CHECK_FALSE(parse_rfc3339("9999-12-31T23:59:60.999999Z"));
    CHECK_FALSE(parse_rfc3339("9999-12-31T23:30:00-01:00"));
    CHECK_FALSE(parse_rfc3339("0001-01-01T00:30:00+01:00"));
    CHECK_FALSE(parse_rfc3339("0000-06-01T00:00:00Z"));
    CHECK(parse_rfc3339("0001-01-01T01:00:00+01:00") == parse_rfc3339("0001-01-01T00:00:00Z"));
    CHECK(format_rfc3339(*parse_rfc3339("2016-12-31T23:59:60Z")) == "2017-01-01T00:00:00.000000Z");
}
