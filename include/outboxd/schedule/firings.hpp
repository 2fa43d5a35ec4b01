#pragma once

// Which firings of a schedule to stage now (README, "Schedules"). Pure: the clock is the
// database's, passed in.
//
// A firing is due once its instant is at or before now. One due for at most kOnTime is on
// time and always staged; older ones were missed (no node owned the schedule then) and
// follow the schedule's catch_up: none stages none of them, one the latest of them, all
// every one (at most kMaxFirings per call; the rest the next call).

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "outboxd/schedule/cron.hpp"

namespace outboxd::schedule {

enum class CatchUp { none, one, all };

[[nodiscard]] std::string_view to_string(CatchUp catch_up) noexcept;
// False for a token other than none, one and all.
[[nodiscard]] bool parse_catch_up(std::string_view token, CatchUp& catch_up) noexcept;

inline constexpr std::chrono::seconds kOnTime{30};
inline constexpr std::size_t kMaxFirings = 1000;

struct Firings {
    std::vector<std::chrono::sys_seconds> stage;  // oldest first
    // The schedule's next firing not yet considered (none: it never fires again).
    std::optional<std::chrono::sys_seconds> next;
};

// `next_due`: the schedule's earliest firing not yet considered.
[[nodiscard]] Firings due_firings(const CronExpr& expr, const date::time_zone& zone,
                                  CatchUp catch_up, std::chrono::sys_seconds next_due,
                                  std::chrono::sys_seconds now);

// The first `count` firings at or after `from` (what GET shows).
[[nodiscard]] std::vector<std::chrono::sys_seconds> upcoming(const CronExpr& expr,
                                                             const date::time_zone& zone,
                                                             std::chrono::sys_seconds from,
                                                             std::size_t count);

}  // namespace outboxd::schedule
