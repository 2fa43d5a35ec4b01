#include <chrono>
#include <sstream>
#include <string>

#include <catch2/catch.hpp>
#include <date/date.h>
#include <date/tz.h>

#include "outboxd/schedule/cron.hpp"

using outboxd::schedule::CronExpr;
using outboxd::schedule::find_time_zone;
using outboxd::schedule::next_fire;
using outboxd::schedule::parse_cron;

namespace {

// "YYYY-MM-DD HH:MM" or "YYYY-MM-DD HH:MM:SS", UTC.
std::chrono::sys_seconds utc(const std::string& text) {
    std::istringstream in(text);
    std::chrono::sys_seconds instant{};
    in >> date::parse(text.size() == 16 ? "%F %R" : "%F %T", instant);
    REQUIRE(!in.fail());
    return instant;
}

// The first fire time of `text` in zone `zone` strictly after `after` (UTC), as
// "YYYY-MM-DD HH:MM" UTC; "error: ..." or "none" otherwise, so a failing CHECK shows why.
std::string next_after(std::string_view text, std::string_view zone, const std::string& after) {
    std::string error;
    const auto expr = parse_cron(text, error);
    if (!expr) return "error: " + error;
    const date::time_zone* tz = find_time_zone(zone, error);
    if (tz == nullptr) return "error: " + error;
    const auto fire = next_fire(*expr, *tz, utc(after));
    return fire ? date::format("%F %R", *fire) : "none";
}

std::string error_of(std::string_view text) {
    std::string error;
    return parse_cron(text, error) ? "parsed" : error;
}

std::string zone_error_of(std::string_view name) {
    std::string error;
    return find_time_zone(name, error) != nullptr ? "found" : error;
}

CronExpr parsed(std::string_view text) {
    std::string error;
    const auto expr = parse_cron(text, error);
    INFO(error);
    REQUIRE(expr.has_value());
    return *expr;
}

// The set bits of `bits`, "1,4,7".
template <std::size_t N>
std::string list(const std::bitset<N>& bits) {
    std::string out;
    for (std::size_t i = 0; i < N; ++i) {
        if (bits.test(i)) out += (out.empty() ? "" : ",") + std::to_string(i);
    }
    return out;
}

}  // namespace

TEST_CASE("cron: every minute and every fifth minute, strictly after", "[unit][schedule]") {
    CHECK(next_after("* * * * *", "UTC", "2026-01-01 00:00") == "2026-01-01 00:01");
    CHECK(next_after("* * * * *", "UTC", "2026-01-01 00:00:30") == "2026-01-01 00:01");
    CHECK(next_after("* * * * *", "UTC", "2026-12-31 23:59:59") == "2027-01-01 00:00");
    CHECK(next_after("*/5 * * * *", "UTC", "2026-01-01 00:01") == "2026-01-01 00:05");
    CHECK(next_after("*/5 * * * *", "UTC", "2026-01-01 00:05") == "2026-01-01 00:10");
    CHECK(next_after("*/5 * * * *", "UTC", "2026-01-01 00:57") == "2026-01-01 01:00");
}

TEST_CASE("cron: ranges, lists and steps", "[unit][schedule]") {
    const CronExpr expr = parsed("10-20/5,45 8-9 * * *");
    CHECK(list(expr.minutes) == "10,15,20,45");
    CHECK(list(expr.hours) == "8,9");
    CHECK(next_after("10-20/5,45 8-9 * * *", "UTC", "2026-01-01 08:20") == "2026-01-01 08:45");
    CHECK(next_after("10-20/5,45 8-9 * * *", "UTC", "2026-01-01 08:45") == "2026-01-01 09:10");
    CHECK(next_after("10-20/5,45 8-9 * * *", "UTC", "2026-01-01 09:45") == "2026-01-02 08:10");
    CHECK(list(parsed("5/20 * * * *").minutes) == "5,25,45");  // a/n runs to the maximum
    CHECK(list(parsed("0 */7 * * *").hours) == "0,7,14,21");
    CHECK(list(parsed("0 0 */10 * *").days_of_month) == "1,11,21,31");
    CHECK(list(parsed("0 0 1-31/15 * *").days_of_month) == "1,16,31");
    CHECK(list(parsed("0 0 * */5 *").months) == "1,6,11");
    CHECK(list(parsed("0 0 * * */2").days_of_week) == "0,2,4,6");
    CHECK(list(parsed(" \t0 0 * * *\t ").minutes) == "0");  // blanks around and between
}

TEST_CASE("cron: month and day names, and 7 as Sunday", "[unit][schedule]") {
    CHECK(parsed("0 12 * jan,JUL mon-FRI") == parsed("0 12 * 1,7 1-5"));
    CHECK(list(parsed("0 12 * jan,JUL mon-FRI").days_of_week) == "1,2,3,4,5");
    // Friday 2026-01-30 noon: Saturday the 31st is out, then nothing until July; 2026-01-01
    // is a Thursday and July 1st is 181 days (25 weeks + 6 days) later: a Wednesday.
    CHECK(next_after("0 12 * jan,JUL mon-FRI", "UTC", "2026-01-30 12:00") == "2026-07-01 12:00");
    CHECK(parsed("0 0 * * 7") == parsed("0 0 * * 0"));
    CHECK(parsed("0 0 * * 7") == parsed("0 0 * * Sun"));
    CHECK(list(parsed("0 0 * * 5-7").days_of_week) == "0,5,6");
    CHECK(list(parsed("0 0 * * 0-7").days_of_week) == "0,1,2,3,4,5,6");
    CHECK(list(parsed("0 0 * * 1/2").days_of_week) == "1,3,5");  // '*' and a/n stop at 6
    CHECK(list(parsed("0 0 * * 1-7/2").days_of_week) == "0,1,3,5");
    // Thursday 2026-01-01: the next Sunday is the 4th.
    CHECK(next_after("0 0 * * 7", "UTC", "2026-01-01 00:00") == "2026-01-04 00:00");
}

TEST_CASE("cron: day of month OR day of week when both are restricted", "[unit][schedule]") {
    CHECK_FALSE(parsed("0 0 13 * fri").dom_star);
    CHECK(parsed("0 0 */2 * fri").dom_star);
    // January 2026: Fri 2, Fri 9, Tue 13, Fri 16.
    CHECK(next_after("0 0 13 * fri", "UTC", "2026-01-01 00:00") == "2026-01-02 00:00");
    CHECK(next_after("0 0 13 * fri", "UTC", "2026-01-09 00:00") == "2026-01-13 00:00");
    CHECK(next_after("0 0 13 * fri", "UTC", "2026-01-13 00:00") == "2026-01-16 00:00");
    // Mon 2026-01-26, then Sunday Feb 1 matches by its day of month.
    CHECK(next_after("0 0 1 * mon", "UTC", "2026-01-26 00:00") == "2026-02-01 00:00");
    // A field starting with '*' makes it AND: odd days that are Fridays (Jan 2 is even).
    CHECK(next_after("0 0 */2 * fri", "UTC", "2026-01-01 00:00") == "2026-01-09 00:00");
    // A 13th that is a Sunday ("*/7" is Sunday only): Jan 13 is a Tuesday, Sep 13 is 243
    // days (34 weeks + 5 days) later: a Sunday; no 13th between is one.
    CHECK(next_after("0 0 13 * */7", "UTC", "2026-01-01 00:00") == "2026-09-13 00:00");
    // Restricted both ways, "30 2 mon" fires on February's Mondays: Feb 2, 2026.
    CHECK(next_after("0 0 30 2 mon", "UTC", "2026-01-01 00:00") == "2026-02-02 00:00");
}

TEST_CASE("cron: February 29 and long horizons, found fast", "[unit][schedule]") {
    CHECK(next_after("0 0 29 2 *", "UTC", "2026-03-01 00:00") == "2028-02-29 00:00");
    CHECK(next_after("0 0 29 2 *", "UTC", "2028-02-29 00:00") == "2032-02-29 00:00");
    CHECK(next_after("0 0 29 2 *", "UTC", "2096-03-01 00:00") == "2104-02-29 00:00");  // 2100
    // Feb 29 on a Sunday: 2088 is one; four years move it 5 weekdays on (1461 days), the
    // eight years across 2100 only 2 (2921 days): Fri 2092, Wed 2096, Fri 2104, Wed 2108,
    // Mon 2112, Sat 2116, Thu 2120, Tue 2124, Sun 2128.
    CHECK(next_after("0 0 29 2 */7", "UTC", "2088-03-01 00:00") == "2128-02-29 00:00");

    std::string error;
    const CronExpr yearly = parsed("0 0 29 2 *");
    const date::time_zone* zone = find_time_zone("America/New_York", error);
    REQUIRE(zone != nullptr);
    const auto began = std::chrono::steady_clock::now();
    for (int i = 0; i < 1000; ++i) {
        CHECK(next_fire(yearly, *zone, utc("2026-03-01 00:00")) == utc("2028-02-29 05:00"));
    }
    // Minute by minute this would be a million steps per call; skipping it is ~24 months.
    CHECK(std::chrono::steady_clock::now() - began < std::chrono::seconds{2});
}

TEST_CASE("cron: local wall-clock time in New York and UTC", "[unit][schedule]") {
    CHECK(next_after("0 9 * * *", "UTC", "2026-07-01 00:00") == "2026-07-01 09:00");
    CHECK(next_after("0 9 * * *", "America/New_York", "2026-07-01 00:00") ==
          "2026-07-01 13:00");  // EDT, UTC-4
    CHECK(next_after("0 9 * * *", "America/New_York", "2026-12-01 00:00") ==
          "2026-12-01 14:00");  // EST, UTC-5
    // Etc/GMT+5 is UTC-5 (POSIX signs).
    CHECK(next_after("0 0 * * *", "Etc/GMT+5", "2026-01-01 00:00") == "2026-01-01 05:00");
}

TEST_CASE("cron: a local time in the spring-forward gap is skipped", "[unit][schedule]") {
    // New York, 2026-03-08 07:00 UTC: 02:00 EST becomes 03:00 EDT; 02:xx does not exist.
    const std::string ny = "America/New_York";
    CHECK(next_after("30 2 * * *", ny, "2026-03-07 08:00") == "2026-03-09 06:30");
    CHECK(next_after("0 2 * * *", ny, "2026-03-08 00:00") == "2026-03-09 06:00");
    CHECK(next_after("0 1 * * *", ny, "2026-03-08 00:00") == "2026-03-08 06:00");  // EST
    CHECK(next_after("0 3 * * *", ny, "2026-03-08 00:00") == "2026-03-08 07:00");  // EDT
    // 01:59 EST, then the next minute is 03:00 EDT.
    CHECK(next_after("* * * * *", ny, "2026-03-08 06:59") == "2026-03-08 07:00");
}

TEST_CASE("cron: a repeated local time fires once, at its first occurrence", "[unit][schedule]") {
    // New York, 2026-11-01 06:00 UTC: 02:00 EDT becomes 01:00 EST; 01:xx happens twice.
    const std::string ny = "America/New_York";
    CHECK(next_after("30 1 * * *", ny, "2026-11-01 04:00") == "2026-11-01 05:30");  // EDT
    // Not again at 06:30 UTC (01:30 EST): the next is Nov 2, 01:30 EST.
    CHECK(next_after("30 1 * * *", ny, "2026-11-01 05:30") == "2026-11-02 06:30");
    CHECK(next_after("30 1 * * *", ny, "2026-11-01 06:15") == "2026-11-02 06:30");
    CHECK(next_after("0 1 * * *", ny, "2026-11-01 04:00") == "2026-11-01 05:00");
    CHECK(next_after("0 2 * * *", ny, "2026-11-01 04:00") == "2026-11-01 07:00");  // EST
    // 01:59 EDT; the repeated hour is skipped; 02:00 EST is 07:00 UTC.
    CHECK(next_after("* * * * *", ny, "2026-11-01 05:59") == "2026-11-01 07:00");
}

TEST_CASE("cron: Berlin, Kolkata and Kathmandu", "[unit][schedule]") {
    const std::string berlin = "Europe/Berlin";
    CHECK(next_after("0 9 * * *", berlin, "2026-07-01 00:00") == "2026-07-01 07:00");  // CEST
    CHECK(next_after("0 9 * * *", berlin, "2026-01-15 00:00") == "2026-01-15 08:00");  // CET
    // 2026-03-29 01:00 UTC: 02:00 CET becomes 03:00 CEST, so 02:30 is skipped that day.
    CHECK(next_after("30 2 * * *", berlin, "2026-03-28 23:00") == "2026-03-30 00:30");
    // 2026-10-25 01:00 UTC: 03:00 CEST becomes 02:00 CET; 02:30 CEST is 00:30 UTC, and
    // 02:30 CET (01:30 UTC) does not fire; the next is Oct 26, 02:30 CET.
    CHECK(next_after("30 2 * * *", berlin, "2026-10-24 23:00") == "2026-10-25 00:30");
    CHECK(next_after("30 2 * * *", berlin, "2026-10-25 00:30") == "2026-10-26 01:30");
    // Kolkata is UTC+05:30: 09:00 is 03:30 UTC, local midnight of July 1 is 18:30 UTC.
    CHECK(next_after("0 9 * * *", "Asia/Kolkata", "2026-01-01 00:00") == "2026-01-01 03:30");
    CHECK(next_after("0 0 * * *", "Asia/Kolkata", "2026-06-30 18:00") == "2026-06-30 18:30");
    // Kathmandu is UTC+05:45: 00:00 UTC is 05:45 local, the next full hour 06:00 local.
    CHECK(next_after("0 * * * *", "Asia/Kathmandu", "2026-01-01 00:00") == "2026-01-01 00:15");
}

TEST_CASE("cron: macros", "[unit][schedule]") {
    CHECK(parsed("@daily") == parsed("0 0 * * *"));
    CHECK(parsed("@midnight") == parsed("0 0 * * *"));
    CHECK(parsed(" @HOURLY ") == parsed("0 * * * *"));
    CHECK(parsed("@weekly") == parsed("0 0 * * 0"));
    CHECK(parsed("@monthly") == parsed("0 0 1 * *"));
    CHECK(parsed("@yearly") == parsed("0 0 1 1 *"));
    CHECK(parsed("@annually") == parsed("0 0 1 1 *"));
    const std::string unknown =
        "unknown cron macro (supported: @yearly, @annually, @monthly, @weekly, @daily, "
        "@midnight, @hourly)";
    CHECK(error_of("@reboot") == unknown);
    CHECK(error_of("@every 5m") == unknown);
}

TEST_CASE("cron: refusals name the field and the problem", "[unit][schedule]") {
    CHECK(error_of("") == "cron expression is empty");
    CHECK(error_of(" \t ") == "cron expression is empty");
    const std::string fields = " fields, expected 5 (minute hour day-of-month month day-of-week)";
    CHECK(error_of("* * * *") == "cron expression has 4" + fields);
    CHECK(error_of("* * * * * *") == "cron expression has 6" + fields);
    CHECK(error_of("1,,2 * * * *") == "cron field 1 (minute): empty item in list");
    CHECK(error_of("* * * * 1,") == "cron field 5 (day of week): empty item in list");
    CHECK(error_of(",1 * * * *") == "cron field 1 (minute): empty item in list");
    CHECK(error_of("5x * * * *") == "cron field 1 (minute): unexpected character 'x' after '5'");
    CHECK(error_of("* * * * mon#2") ==
          "cron field 5 (day of week): unexpected character '#' after 'mon'");
    CHECK(error_of("0 0 ? * *") == "cron field 3 (day of month): unexpected character '?'");
    CHECK(error_of("0 0 L * *") == "cron field 3 (day of month): 'L' is not a number");
    CHECK(error_of("*-5 * * * *") == "cron field 1 (minute): unexpected character '-' after '*'");
    CHECK(error_of("*/5/2 * * * *") ==
          "cron field 1 (minute): unexpected character '/' after '*/5'");
    CHECK(error_of("*\x01 * * * *") == "cron field 1 (minute): unexpected byte 0x01 after '*'");
    CHECK(error_of("* * * * *\n") == "cron field 5 (day of week): unexpected byte 0x0A after '*'");
    CHECK(error_of("* 5-1 * * *") == "cron field 2 (hour): range 5-1 is reversed");
    CHECK(error_of("* * * dec-jan *") == "cron field 4 (month): range 12-1 is reversed");
    CHECK(error_of("*/0 * * * *") == "cron field 1 (minute): step 0 is out of range 1-60");
    CHECK(error_of("* * * * */8") == "cron field 5 (day of week): step 8 is out of range 1-7");
    CHECK(error_of("60 * * * *") == "cron field 1 (minute): 60 is out of range 0-59");
    CHECK(error_of("0 24 * * *") == "cron field 2 (hour): 24 is out of range 0-23");
    CHECK(error_of("0 0 0 * *") == "cron field 3 (day of month): 0 is out of range 1-31");
    CHECK(error_of("0 0 32 * *") == "cron field 3 (day of month): 32 is out of range 1-31");
    CHECK(error_of("0 0 * 13 *") == "cron field 4 (month): 13 is out of range 1-12");
    CHECK(error_of("0 0 * * 8") == "cron field 5 (day of week): 8 is out of range 0-7");
    CHECK(error_of("99999999999999999999 * * * *") ==
          "cron field 1 (minute): 99999999999999999999 is out of range 0-59");
    CHECK(error_of("* * * foo *") == "cron field 4 (month): unknown name 'foo'");
    CHECK(error_of("* * * january *") == "cron field 4 (month): unknown name 'january'");
    CHECK(error_of("5- * * * *") == "cron field 1 (minute): missing value after '5-'");
    CHECK(error_of("*/ * * * *") == "cron field 1 (minute): missing step after '*/'");

    const std::string padded = "0 0 * * *" + std::string(256 - 9, ' ');
    CHECK(error_of(padded) == "parsed");  // 256 bytes is the limit, not past it
    CHECK(error_of(padded + " ") == "cron expression is longer than 256 bytes");
    CHECK(error_of(std::string(1 << 20, '*')) == "cron expression is longer than 256 bytes");

    const std::string never = "cron expression never fires: none of its months has any of its days";
    CHECK(error_of("0 0 30 2 *") == never);
    CHECK(error_of("0 0 31 4,6,9,11 *") == never);
    CHECK(error_of("0 0 30 2 */7") == never);  // '*': AND, and no February has a 30th
    CHECK(error_of("0 0 31 4,5 *") == "parsed");
    CHECK(error_of("0 0 29 2 *") == "parsed");
}

TEST_CASE("cron: hostile time zone names are refused without throwing", "[unit][schedule]") {
    CHECK(zone_error_of("") == "time zone name is empty");
    CHECK(zone_error_of("Not/AZone") == "unknown time zone 'Not/AZone'");
    CHECK(zone_error_of("america/new_york") == "unknown time zone 'america/new_york'");
    CHECK(zone_error_of("../../etc/passwd") ==
          "time zone name contains character '.', which no zone name has");
    CHECK(zone_error_of(std::string("UTC\0x", 5)) ==
          "time zone name contains byte 0x00, which no zone name has");
    CHECK(zone_error_of("Europe/Berlin\n") ==
          "time zone name contains byte 0x0A, which no zone name has");
    CHECK(zone_error_of(std::string(1 << 20, 'A')) == "time zone name is longer than 64 bytes");
    CHECK(zone_error_of("/etc/localtime") == "time zone name has an empty path segment");
    CHECK(zone_error_of("America//New_York") == "time zone name has an empty path segment");
    CHECK(zone_error_of("localtime") ==
          "time zone 'localtime' is the host's zone; name an IANA zone");
    CHECK(zone_error_of("UTC") == "found");
    CHECK(zone_error_of("America/Argentina/Buenos_Aires") == "found");
    CHECK(zone_error_of("Etc/GMT+5") == "found");
}

TEST_CASE("cron: next_fire bounds", "[unit][schedule]") {
    std::string error;
    const date::time_zone* zone = find_time_zone("UTC", error);
    REQUIRE(zone != nullptr);
    CHECK_FALSE(next_fire(CronExpr{}, *zone, utc("2026-01-01 00:00")).has_value());  // no days
    const CronExpr every = parsed("* * * * *");
    const auto far = date::sys_days{date::year{20000} / 1 / 1};
    CHECK_FALSE(next_fire(every, *zone, std::chrono::sys_seconds{far}).has_value());
    CHECK_FALSE(next_fire(every, *zone, std::chrono::sys_seconds::max()).has_value());
    CHECK_FALSE(next_fire(every, *zone, std::chrono::sys_seconds::min()).has_value());
    // `after` must lie in the years 1-9999; the fire time may be later.
    const std::chrono::sys_seconds end{date::sys_days{date::year{10000} / 1 / 1}};
    CHECK(next_fire(every, *zone, end - std::chrono::seconds{1}) == end);
    CHECK_FALSE(next_fire(every, *zone, end).has_value());
}
