#include "outboxd/schedule/cron.hpp"

#include <algorithm>
#include <array>
#include <cstdint>
#include <exception>
#include <utility>

#include <date/date.h>
#include <date/tz.h>

namespace outboxd::schedule {

namespace {

using namespace std::chrono_literals;

// Bit v: value v is in a field's set. Every field fits (minutes are 0-59).
using Mask = std::uint64_t;

// What one field accepts. Written values may go up to `top`; '*' and a/n stop at `last`.
// They differ only for day of week, whose 7 is Sunday again and folds onto 0.
struct FieldSpec {
    std::string_view name;
    int min, top, last;
    std::string_view names;  // three letters per value from `min` on; empty: none
};

constexpr std::array<FieldSpec, 5> kFields{{
    {"minute", 0, 59, 59, {}},
    {"hour", 0, 23, 23, {}},
    {"day of month", 1, 31, 31, {}},
    {"month", 1, 12, 12, "janfebmaraprmayjunjulaugsepoctnovdec"},
    {"day of week", 0, 7, 6, "sunmontuewedthufrisat"},
}};

constexpr std::array<std::pair<std::string_view, std::string_view>, 7> kMacros{
    {{"@yearly", "0 0 1 1 *"},
     {"@annually", "0 0 1 1 *"},
     {"@monthly", "0 0 1 * *"},
     {"@weekly", "0 0 * * 0"},
     {"@daily", "0 0 * * *"},
     {"@midnight", "0 0 * * *"},
     {"@hourly", "0 * * * *"}}};

// The 400-year Gregorian cycle: every calendar arrangement recurs within it.
constexpr int kSearchMonths = 400 * 12;

bool is_blank(char c) { return c == ' ' || c == '\t'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }
char lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }
bool is_letter(char c) { return lower(c) >= 'a' && lower(c) <= 'z'; }

bool equals_ignoring_case(std::string_view a, std::string_view b) {
    return std::equal(a.begin(), a.end(), b.begin(), b.end(),
                      [](char x, char y) { return lower(x) == lower(y); });
}

// A byte for a message: quoted when printable, in hex otherwise, so that hostile input
// cannot put control characters into an error that gets logged or returned.
std::string describe_byte(char c) {
    if (c > ' ' && c < 0x7f) return std::string("character '") + c + "'";
    static constexpr std::string_view kHex = "0123456789ABCDEF";
    const auto byte = static_cast<unsigned char>(c);
    return std::string("byte 0x") + kHex[byte >> 4] + kHex[byte & 0xf];
}

// Sets `error` to `a` `b` `c` from a noexcept function. The fallback is shorter than the
// capacity every std::string has (15 bytes), so assigning it cannot allocate.
void set_error(std::string& error, std::string_view a, std::string_view b = {},
               std::string_view c = {}) noexcept {
    try {
        error.assign(a).append(b).append(c);
    } catch (...) {
        error.assign("out of memory");
    }
}

// Reads one item of a field: "*", "a" or "a-b", each optionally followed by "/n".
// Everything it has consumed is grammar (digits, letters, '*', '-', '/'), so the consumed
// prefix may appear in messages.
class ItemReader {
public:
    ItemReader(std::string_view item, const FieldSpec& spec) : item_(item), spec_(spec) {}

    // Adds the item's values to `mask`; the problem otherwise.
    std::optional<std::string> read(Mask& mask) {
        int low = spec_.min;
        int high = spec_.last;
        bool single = false;  // "a": with a step it runs to the end of the field
        if (at('*')) {
            ++pos_;
        } else {
            if (auto problem = read_value(low)) return problem;
            high = low;
            single = !at('-');
            if (!single) {
                ++pos_;
                if (auto problem = read_value(high)) return problem;
                if (high < low) {
                    return "range " + std::to_string(low) + "-" + std::to_string(high) +
                           " is reversed";
                }
            }
        }
        int step = 1;
        if (at('/')) {
            ++pos_;
            if (auto problem = read_step(step)) return problem;
            if (single) high = spec_.last;
        }
        if (pos_ < item_.size()) return unexpected();
        add(mask, low, high, step);
        return std::nullopt;
    }

private:
    bool at(char c) const { return pos_ < item_.size() && item_[pos_] == c; }
    std::string consumed() const { return std::string(item_.substr(0, pos_)); }

    std::string unexpected() const {
        std::string problem = "unexpected " + describe_byte(item_[pos_]);
        return pos_ == 0 ? problem : problem + " after '" + consumed() + "'";
    }

    // Digits at the cursor as a number, saturating (the caller reports it out of range).
    std::string_view read_digits(int& value) {
        const std::size_t start = pos_;
        value = 0;
        while (pos_ < item_.size() && is_digit(item_[pos_])) {
            if (value < 1000000) value = value * 10 + (item_[pos_] - '0');
            ++pos_;
        }
        return item_.substr(start, pos_ - start);
    }

    std::optional<std::string> read_value(int& value) {
        if (pos_ == item_.size()) return "missing value after '" + consumed() + "'";
        if (is_letter(item_[pos_])) return read_name(value);
        const std::string_view digits = read_digits(value);
        if (digits.empty()) return unexpected();
        if (value < spec_.min || value > spec_.top) {
            return std::string(digits) + " is out of range " + std::to_string(spec_.min) + "-" +
                   std::to_string(spec_.top);
        }
        return std::nullopt;
    }

    std::optional<std::string> read_name(int& value) {
        const std::size_t start = pos_;
        while (pos_ < item_.size() && is_letter(item_[pos_])) ++pos_;
        const std::string word(item_.substr(start, pos_ - start));
        if (spec_.names.empty()) return "'" + word + "' is not a number";
        for (std::size_t i = 0; i * 3 < spec_.names.size(); ++i) {
            if (equals_ignoring_case(word, spec_.names.substr(i * 3, 3))) {
                value = spec_.min + static_cast<int>(i);
                return std::nullopt;
            }
        }
        return "unknown name '" + word + "'";
    }

    std::optional<std::string> read_step(int& step) {
        if (pos_ == item_.size()) return "missing step after '" + consumed() + "'";
        const std::string_view digits = read_digits(step);
        if (digits.empty()) return unexpected();
        const int widest = spec_.last - spec_.min + 1;  // a wider step could only hit `low`
        if (step < 1 || step > widest) {
            return "step " + std::string(digits) + " is out of range 1-" + std::to_string(widest);
        }
        return std::nullopt;
    }

    void add(Mask& mask, int low, int high, int step) const {
        const int span = spec_.last - spec_.min + 1;
        for (int v = low; v <= high; v += step) {
            const int value = v > spec_.last ? v - span : v;  // day of week 7 -> 0
            mask |= Mask{1} << value;
        }
    }

    std::string_view item_;
    const FieldSpec& spec_;
    std::size_t pos_ = 0;
};

// The values of one field (a comma list of items); the problem otherwise.
std::optional<std::string> parse_field(std::string_view text, const FieldSpec& spec, Mask& mask) {
    while (true) {
        const std::size_t comma = text.find(',');
        const std::string_view item = text.substr(0, comma);
        if (item.empty()) return std::string("empty item in list");
        if (auto problem = ItemReader(item, spec).read(mask)) return problem;
        if (comma == std::string_view::npos) return std::nullopt;
        text.remove_prefix(comma + 1);
    }
}

// Splits `text` at blanks into `fields`; returns how many fields it has (counting past 5).
std::size_t split_fields(std::string_view text, std::array<std::string_view, 5>& fields) {
    std::size_t count = 0;
    std::size_t pos = 0;
    while (true) {
        while (pos < text.size() && is_blank(text[pos])) ++pos;
        if (pos == text.size()) return count;
        const std::size_t start = pos;
        while (pos < text.size() && !is_blank(text[pos])) ++pos;
        if (count < fields.size()) fields[count] = text.substr(start, pos - start);
        ++count;
    }
}

// Days 1-31 of month `ym` on which `expr` may fire, as bit d for day d.
std::uint32_t matching_days(const CronExpr& expr, date::year_month ym) {
    if (!expr.months.test(static_cast<unsigned>(ym.month()))) return 0;
    const unsigned length = static_cast<unsigned>((ym / date::last).day());
    const unsigned first_weekday = date::weekday{date::sys_days{ym / 1}}.c_encoding();
    std::uint32_t by_dom = 0;
    std::uint32_t by_dow = 0;
    for (unsigned d = 1; d <= length; ++d) {
        if (expr.days_of_month.test(d)) by_dom |= std::uint32_t{1} << d;
        if (expr.days_of_week.test((first_weekday + d - 1) % 7)) by_dow |= std::uint32_t{1} << d;
    }
    return expr.dom_star || expr.dow_star ? (by_dom & by_dow) : (by_dom | by_dow);
}

// Whether `expr` has any day it may fire on. Hours and minutes always have a value, so only
// the day fields can rule every instant out. 2000-2027 suffices: a 28-year cycle without a
// skipped leap year, in which every date falls on every weekday (Feb 29 included).
bool fires_ever(const CronExpr& expr) {
    date::year_month ym = date::year{2000} / date::January;
    for (int i = 0; i < 28 * 12; ++i, ym += date::months{1}) {
        if (matching_days(expr, ym) != 0) return true;
    }
    return false;
}

std::optional<CronExpr> parse_fields(std::string_view text, std::string& error) {
    std::array<std::string_view, 5> fields;
    const std::size_t count = split_fields(text, fields);
    if (count == 0) {
        error = "cron expression is empty";
        return std::nullopt;
    }
    if (count != fields.size()) {
        error = "cron expression has " + std::to_string(count) +
                " fields, expected 5 (minute hour day-of-month month day-of-week)";
        return std::nullopt;
    }
    std::array<Mask, 5> masks{};
    for (std::size_t i = 0; i < fields.size(); ++i) {
        if (auto problem = parse_field(fields[i], kFields[i], masks[i])) {
            error = "cron field " + std::to_string(i + 1) + " (" + std::string(kFields[i].name) +
                    "): " + *problem;
            return std::nullopt;
        }
    }
    const bool dom_star = fields[2].front() == '*';
    const bool dow_star = fields[4].front() == '*';
    const CronExpr expr{masks[0], masks[1], masks[2], masks[3], masks[4], dom_star, dow_star};
    if (!fires_ever(expr)) {
        error = "cron expression never fires: none of its months has any of its days";
        return std::nullopt;
    }
    return expr;
}

std::optional<CronExpr> parse_macro(std::string_view text, std::string& error) {
    while (!text.empty() && is_blank(text.back())) text.remove_suffix(1);
    for (const auto& [name, expansion] : kMacros) {
        if (equals_ignoring_case(text, name)) return parse_fields(expansion, error);
    }
    error =
        "unknown cron macro (supported: @yearly, @annually, @monthly, @weekly, @daily, "
        "@midnight, @hourly)";
    return std::nullopt;
}

// Why `name` cannot be an IANA zone name, before asking the library (which reads files
// named after zones): nullopt when it may be one.
std::optional<std::string> zone_name_problem(std::string_view name) {
    if (name.empty()) return std::string("time zone name is empty");
    if (name.size() > kMaxTimeZoneNameBytes) {
        return "time zone name is longer than " + std::to_string(kMaxTimeZoneNameBytes) + " bytes";
    }
    for (const char c : name) {
        if (!is_letter(c) && !is_digit(c) && c != '/' && c != '_' && c != '-' && c != '+') {
            return "time zone name contains " + describe_byte(c) + ", which no zone name has";
        }
    }
    if (name.front() == '/' || name.back() == '/' || name.find("//") != std::string_view::npos) {
        return std::string("time zone name has an empty path segment");
    }
    if (name == "localtime") {
        return std::string("time zone 'localtime' is the host's zone; name an IANA zone");
    }
    return std::nullopt;
}

// The first instant, not before `not_before`, at which `expr` fires on local day `day`,
// starting at `from` minutes past midnight.
std::optional<date::sys_seconds> first_in_day(const CronExpr& expr, const date::time_zone& zone,
                                              date::local_days day, int from,
                                              date::sys_seconds not_before) {
    for (int hour = from / 60; hour < 24; ++hour) {
        if (!expr.hours.test(static_cast<std::size_t>(hour))) continue;
        for (int minute = hour == from / 60 ? from % 60 : 0; minute < 60; ++minute) {
            if (!expr.minutes.test(static_cast<std::size_t>(minute))) continue;
            const date::local_seconds local{day + std::chrono::hours{hour} +
                                            std::chrono::minutes{minute}};
            const date::local_info info = zone.get_info(local);
            if (info.result == date::local_info::nonexistent) continue;  // in a gap: skipped
            // When ambiguous, `first` holds the offset before the clocks went back: the
            // earlier instant. Once it has passed, the repeat does not fire.
            const date::sys_seconds instant{local.time_since_epoch() - info.first.offset};
            if (instant >= not_before) return instant;
        }
    }
    return std::nullopt;
}

std::optional<date::sys_seconds> search(const CronExpr& expr, const date::time_zone& zone,
                                        date::sys_seconds not_before) {
    // Candidates are whole local minutes: the first one at or after `not_before`.
    const auto start = date::ceil<std::chrono::minutes>(zone.to_local(not_before));
    const auto start_day = date::floor<date::days>(start);
    const int start_minute = static_cast<int>((start - start_day).count());
    const date::year_month_day start_date{start_day};
    date::year_month ym = start_date.year() / start_date.month();
    unsigned first_day = static_cast<unsigned>(start_date.day());
    for (int i = 0; i < kSearchMonths; ++i, ym += date::months{1}, first_day = 1) {
        const std::uint32_t days = matching_days(expr, ym);
        for (unsigned d = first_day; d <= 31; ++d) {
            if ((days >> d & 1U) == 0) continue;
            const date::local_days day{ym / date::day{d}};
            const int from = day == start_day ? start_minute : 0;
            if (auto instant = first_in_day(expr, zone, day, from, not_before)) return instant;
        }
    }
    return std::nullopt;
}

}  // namespace

std::optional<CronExpr> parse_cron(std::string_view text, std::string& error) noexcept {
    try {
        if (text.size() > kMaxCronExprBytes) {
            error =
                "cron expression is longer than " + std::to_string(kMaxCronExprBytes) + " bytes";
            return std::nullopt;
        }
        while (!text.empty() && is_blank(text.front())) text.remove_prefix(1);
        if (!text.empty() && text.front() == '@') return parse_macro(text, error);
        return parse_fields(text, error);
    } catch (const std::exception&) {  // only std::bad_alloc can get here
        set_error(error, "out of memory");
        return std::nullopt;
    }
}

const date::time_zone* find_time_zone(std::string_view name, std::string& error) noexcept {
    bool plausible = false;
    try {
        if (auto problem = zone_name_problem(name)) {
            error = *problem;
            return nullptr;
        }
        plausible = true;
        const date::time_zone* zone = date::locate_zone(name);  // throws for an unknown name
        // The library reads a zone's file on first use: do it now, so that a file it cannot
        // read fails here (caught) rather than in next_fire.
        (void)zone->get_info(date::sys_seconds{});
        return zone;
    } catch (const std::exception&) {
        // A plausible name is printable and short: fit for a message.
        if (plausible) {
            set_error(error, "unknown time zone '", name, "'");
        } else {
            set_error(error, "out of memory");  // the only other exception
        }
        return nullptr;
    }
}

std::optional<std::chrono::sys_seconds> next_fire(const CronExpr& expr, const date::time_zone& zone,
                                                  std::chrono::sys_seconds after) noexcept {
    // Outside these years the calendar types of date.h could overflow.
    const date::sys_seconds earliest{date::sys_days{date::year{1} / 1 / 1}};
    const date::sys_seconds end{date::sys_days{date::year{10000} / 1 / 1}};
    if (after < earliest || after >= end) return std::nullopt;
    try {
        return search(expr, zone, after + 1s);
    } catch (const std::exception&) {
        return std::nullopt;
    }
}

}  // namespace outboxd::schedule
