#include "time_format.hpp"

#include <cstdio>
#include <ctime>

namespace outboxd::http {

std::string format_rfc3339(store::TimePoint instant) {
    const auto micros =
        std::chrono::duration_cast<std::chrono::microseconds>(instant.time_since_epoch()).count();
    std::int64_t seconds = micros / 1'000'000;
    std::int64_t fraction = micros % 1'000'000;
    if (fraction < 0) {
        fraction += 1'000'000;
        --seconds;
    }
    const std::time_t t = static_cast<std::time_t>(seconds);
    std::tm tm{};
    gmtime_r(&t, &tm);
    char buffer[64];
    std::snprintf(buffer, sizeof buffer, "%04d-%02d-%02dT%02d:%02d:%02d.%06lldZ", tm.tm_year + 1900,
                  tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                  static_cast<long long>(fraction));
    return buffer;
}

std::optional<store::TimePoint> parse_rfc3339(std::string_view text) {
    const std::string s{text};
    int year, month, day, hour, minute, second, consumed = 0;
    if (std::sscanf(s.c_str(), "%4d-%2d-%2d%*1[Tt ]%2d:%2d:%2d%n", &year, &month, &day, &hour,
                    &minute, &second, &consumed) != 6 ||
        consumed != 19) {
        return std::nullopt;
    }
    if (month < 1 || month > 12 || day < 1 || day > 31 || hour > 23 || minute > 59 || second > 60) {
        return std::nullopt;
    }
    std::size_t pos = 19;
    std::int64_t micros = 0;
    if (pos < s.size() && s[pos] == '.') {
        std::int64_t scale = 100'000;
        std::size_t digits = 0;
        for (++pos; pos < s.size() && s[pos] >= '0' && s[pos] <= '9'; ++pos, ++digits) {
            micros += (s[pos] - '0') * scale;
            scale /= 10;
        }
        if (digits == 0) return std::nullopt;
    }
    int offset_minutes = 0;
    if (pos < s.size() && (s[pos] == 'Z' || s[pos] == 'z')) {
        ++pos;
    } else if (pos + 6 == s.size() && (s[pos] == '+' || s[pos] == '-') && s[pos + 3] == ':') {
        int oh = 0, om = 0;
        if (std::sscanf(s.c_str() + pos + 1, "%2d:%2d", &oh, &om) != 2 || oh > 23 || om > 59) {
            return std::nullopt;
        }
        offset_minutes = (s[pos] == '-' ? -1 : 1) * (oh * 60 + om);
        pos += 6;
    } else {
        return std::nullopt;
    }
    if (pos != s.size()) return std::nullopt;
    std::tm tm{};
    tm.tm_year = year - 1900;
    tm.tm_mon = month - 1;
    tm.tm_mday = day;
    tm.tm_hour = hour;
    tm.tm_min = minute;
    tm.tm_sec = second;
    const std::time_t utc = timegm(&tm) - std::time_t{offset_minutes} * 60;
    // Within the years the format writes (0001..9999, in UTC): a leap second or an offset can
    // carry a valid-looking text past either end ("9999-12-31T23:59:60Z" is year 10000),
    // which would not read back the same (found by the staging-body fuzzer).
    constexpr std::time_t kFirst = -62135596800;  // 0001-01-01T00:00:00Z
    constexpr std::time_t kEnd = 253402300800;    // 10000-01-01T00:00:00Z
    if (utc < kFirst || utc >= kEnd) return std::nullopt;
    return store::TimePoint{std::chrono::duration_cast<store::TimePoint::duration>(
        std::chrono::seconds{utc} + std::chrono::microseconds{micros})};
}

}  // namespace outboxd::http
