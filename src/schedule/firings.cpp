#include "outboxd/schedule/firings.hpp"

namespace outboxd::schedule {
namespace {

constexpr std::size_t kMaxSteps = 1'000'000;

}  // namespace

std::string_view to_string(CatchUp catch_up) noexcept {
    switch (catch_up) {
        case CatchUp::none:
            return "none";
        case CatchUp::all:
            return "all";
        case CatchUp::one:
            break;
    }
    return "one";
}

bool parse_catch_up(std::string_view token, CatchUp& catch_up) noexcept {
    if (token == "none") {
        catch_up = CatchUp::none;
    } else if (token == "one") {
        catch_up = CatchUp::one;
    } else if (token == "all") {
        catch_up = CatchUp::all;
    } else {
        return false;
    }
    return true;
}

Firings due_firings(const CronExpr& expr, const date::time_zone& zone, CatchUp catch_up,
                    std::chrono::sys_seconds next_due, std::chrono::sys_seconds now) {
    Firings out;
    std::optional<std::chrono::sys_seconds> at = next_due;
    std::optional<std::chrono::sys_seconds> latest_missed;
    // Bounded work per call however long nobody owned the schedule (each step ~µs): the
    // next call goes on from where this one stopped.
    std::size_t steps = 0;
    while (at && *at <= now && out.stage.size() < kMaxFirings && ++steps <= kMaxSteps) {
        if (*at >= now - kOnTime || catch_up == CatchUp::all) {
            out.stage.push_back(*at);
        } else if (catch_up == CatchUp::one) {
            latest_missed = *at;
        }
        at = next_fire(expr, zone, *at);
    }
    if (latest_missed) out.stage.insert(out.stage.begin(), *latest_missed);
    out.next = at;
    return out;
}

std::vector<std::chrono::sys_seconds> upcoming(const CronExpr& expr, const date::time_zone& zone,
                                               std::chrono::sys_seconds from, std::size_t count) {
    std::vector<std::chrono::sys_seconds> out;
    // The first one may be `from` itself.
    auto at = next_fire(expr, zone, from - std::chrono::seconds{1});
    while (at && out.size() < count) {
        out.push_back(*at);
        at = next_fire(expr, zone, *at);
    }
    return out;
}

}  // namespace outboxd::schedule
