#pragma once

// Cron schedules: the standard five-field expression "minute hour day-of-month month
// day-of-week" and the instants it fires at, read as wall-clock time in an IANA time zone.
// The text comes from outside the node (an API body, a row), so none of these functions
// throws and every refusal names the field and the problem.
//
// Grammar of a field: '*', a number, a range a-b, a step */n, a-b/n or a/n (a/n means
// a-<field maximum>/n), and comma lists of these. Month names jan..dec and day names
// sun..sat, in any case, stand wherever a number may (not as a step). Day of week 7 is
// Sunday, like 0; '*' and a/n in that field stop at 6 so Sunday is not counted twice. The
// macros @yearly (@annually), @monthly, @weekly, @daily (@midnight) and @hourly stand for
// their usual expansions; @reboot is refused (a schedule has no boot).
//
// Days (the Vixie cron rule): when day of month and day of week are both restricted, i.e.
// neither field starts with '*', a day matches when EITHER does ("0 0 1 * mon": the 1st of
// each month and every Monday). When either starts with '*' (even "*/2"), both must match.
//
// Time zones (the library date/tz.h over the system's /usr/share/zoneinfo): a local time
// that does not exist (the spring-forward gap) is skipped, without firing late; a local time
// that occurs twice (fall-back) fires once, at its first occurrence. So "* * * * *" is
// silent for the repeated hour, and "30 2 * * *" does not fire on a spring-forward day in
// America/New_York. The library reads only the transitions listed in a zone's file, not
// its closing rule: with Debian's files, which list them up to 2037, later years keep the
// zone's last offset (New York stays on EST), however far a search goes.

#include <bitset>
#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace date {
class time_zone;
}  // namespace date

namespace outboxd::schedule {

// The longest expression and zone name accepted, in bytes: both come from clients.
inline constexpr std::size_t kMaxCronExprBytes = 256;
inline constexpr std::size_t kMaxTimeZoneNameBytes = 64;

// A parsed expression: bit v of a set means value v matches.
struct CronExpr {
    std::bitset<60> minutes;        // 0-59
    std::bitset<24> hours;          // 0-23
    std::bitset<32> days_of_month;  // 1-31 (bit 0 unused)
    std::bitset<13> months;         // 1-12 (bit 0 unused)
    std::bitset<7> days_of_week;    // 0-6, 0 = Sunday (a written 7 is stored as 0)
    bool dom_star = false;          // the day-of-month field started with '*'
    bool dow_star = false;          // the day-of-week field started with '*'

    friend bool operator==(const CronExpr&, const CronExpr&) = default;
};

// `text` parsed, or nullopt with `error` set, e.g. "cron field 2 (hour): 24 is out of range
// 0-23". Refuses a wrong field count, empty list items, characters outside the grammar,
// reversed ranges, steps of 0 or wider than the field, values out of range, text longer
// than kMaxCronExprBytes, and expressions that can never fire ("0 0 30 2 *").
[[nodiscard]] std::optional<CronExpr> parse_cron(std::string_view text,
                                                 std::string& error) noexcept;

// The IANA zone `name` ("Europe/Berlin", "UTC"), loaded; nullptr with `error` set for an
// unknown zone or a name no zone has (empty, longer than kMaxTimeZoneNameBytes, bytes
// outside [A-Za-z0-9_+-/], empty path segments) and for "localtime", which is the host's
// zone rather than a name. The zone lives as long as the process.
[[nodiscard]] const date::time_zone* find_time_zone(std::string_view name,
                                                    std::string& error) noexcept;

// The first instant strictly after `after` at which `expr` fires in `zone` (see the top of
// this file for gaps and repeated hours). Searches 400 years, a whole cycle of the
// Gregorian calendar, so nullopt means never (only for a CronExpr not made by parse_cron)
// or `after` outside the years 1-9999. Skips whole months and days that do not match: a
// yearly expression costs microseconds.
[[nodiscard]] std::optional<std::chrono::sys_seconds> next_fire(
    const CronExpr& expr, const date::time_zone& zone, std::chrono::sys_seconds after) noexcept;

}  // namespace outboxd::schedule
