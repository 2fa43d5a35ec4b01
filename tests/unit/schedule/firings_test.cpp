// Which firings of a schedule are staged: on time ones always, missed ones by catch_up.

#include <catch2/catch.hpp>

#include "outboxd/schedule/firings.hpp"

using namespace outboxd::schedule;
using namespace std::chrono;
using namespace std::chrono_literals;

namespace {

sys_seconds at(int hour, int minute, int second = 0) {
    return sys_days{2026y / December / 2} + hours{hour} + minutes{minute} + seconds{second};
}

const CronExpr& every_minute() {
    static const CronExpr expr = [] {
        std::string error;
        return *parse_cron("* * * * *", error);
    }();
    return expr;
}

const date::time_zone& utc() {
    std::string error;
    return *find_time_zone("UTC", error);
}

}  // namespace

TEST_CASE("on-time firings are staged, missed ones follow catch_up", "[unit][schedule]") {
    SECTION("due on time: staged whatever catch_up says") {
        for (const auto catch_up : {CatchUp::none, CatchUp::one, CatchUp::all}) {
            const auto plan = due_firings(every_minute(), utc(), catch_up, at(6, 15), at(6, 15, 1));
            REQUIRE(plan.stage == std::vector{at(6, 15)});
            CHECK(plan.next == at(6, 16));
        }
    }
    SECTION("not due yet: nothing, and the next firing stays") {
        const auto plan =
            due_firings(every_minute(), utc(), CatchUp::all, at(6, 16), at(6, 15, 59));
        CHECK(plan.stage.empty());
        CHECK(plan.next == at(6, 16));
    }
    SECTION("ten minutes unowned") {
        const auto none =
            due_firings(every_minute(), utc(), CatchUp::none, at(6, 0), at(6, 10, 10));
        CHECK(none.stage == std::vector{at(6, 10)});  // 06:10 is within 30 s: on time
        CHECK(none.next == at(6, 11));
        const auto one = due_firings(every_minute(), utc(), CatchUp::one, at(6, 0), at(6, 10, 10));
        CHECK(one.stage == std::vector{at(6, 9), at(6, 10)});  // the latest missed, then on time
        const auto all = due_firings(every_minute(), utc(), CatchUp::all, at(6, 0), at(6, 10, 10));
        REQUIRE(all.stage.size() == 11);
        CHECK(all.stage.front() == at(6, 0));
        CHECK(all.stage.back() == at(6, 10));
        CHECK(all.next == at(6, 11));
    }
    SECTION("catching up all is bounded per call, and goes on from there") {
        const auto plan = due_firings(every_minute(), utc(), CatchUp::all, at(0, 0), at(23, 0));
        REQUIRE(plan.stage.size() == kMaxFirings);
        CHECK(plan.next == at(0, 0) + minutes{kMaxFirings});
    }
    SECTION("upcoming lists the next firings from a time, itself included") {
        CHECK(upcoming(every_minute(), utc(), at(6, 15), 3) ==
              std::vector{at(6, 15), at(6, 16), at(6, 17)});
    }
    SECTION("catch_up tokens") {
        CatchUp parsed{};
        CHECK(parse_catch_up("all", parsed));
        CHECK(parsed == CatchUp::all);
        CHECK(to_string(parsed) == "all");
        CHECK_FALSE(parse_catch_up("ALL", parsed));
        CHECK_FALSE(parse_catch_up("", parsed));
    }
}
