// The chaos harness's own logic, without processes or a database: how delivery logs are
// read, how redeliveries are pinned on faults and summed by kind, how recovery is measured,
// how frames and database URLs look.

#include <catch2/catch.hpp>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include <unistd.h>

#include "database_url.hpp"
#include "delivery_log.hpp"
#include "done_rate.hpp"
#include "fault_kind.hpp"
#include "redeliveries.hpp"
#include "ws_frame.hpp"

namespace {

using namespace outboxd::chaos;

std::string write_temp(const std::string& name, const std::string& text) {
    const auto path = std::filesystem::temp_directory_path() /
                      ("outboxd-chaos-unit-" + std::to_string(::getpid()) + "-" + name);
    std::ofstream{path, std::ios::binary} << text;
    return path.string();
}

Delivery delivery(const std::string& key, std::int64_t at_ms) {
    return {at_ms, key + ".t", key, 1, 0};
}

}  // namespace

TEST_CASE("a delivery log is read line by line, skipping a line cut short", "[unit][chaos]") {
    const auto path = write_temp("deliveries",
                                 "deliver 100 7.41 order 42:0 1\n"
                                 "complete 105 7.41 order 42:0\n"
                                 "deliver 110 8.42 b:0 2\n"
                                 "fail 120 8.42 b:0\n"
                                 "nonsense\n"
                                 "deliver 130 9.43 c:0 1\n"
                                 "deliver 140 10.4");
    DeliveryRecords records;
    read_delivery_log(path, 3, records);
    REQUIRE(records.deliveries.size() == 3);
    CHECK(records.deliveries[0].dispatch_key == "order 42:0");
    CHECK(records.deliveries[0].task_id == "7.41");
    CHECK(records.deliveries[0].at_ms == 100);
    CHECK(records.deliveries[1].attempt == 2);
    CHECK(records.deliveries[2].worker == 3);
    CHECK(records.completed.contains("7.41"));
    CHECK_FALSE(records.completed.contains("8.42"));
    CHECK(records.failed == 1);
    CHECK(records.malformed == 1);
    CHECK(unanswered_deliveries(path) == 1);
    std::filesystem::remove(path);
}

TEST_CASE("a redelivery is explained only by a fault its first delivery was in flight at",
          "[unit][chaos]") {
    const std::vector<FaultWindow> faults{{10'000, 12'000}, {14'000, 15'000}, {40'000, 41'000}};
    const std::vector<Delivery> deliveries{
        delivery("a", 8'000),  delivery("a", 13'000),  // in flight at the first fault
        delivery("e", 13'500), delivery("e", 14'500),  // fits two faults: the latest is taken
        delivery("b", 39'000), delivery("b", 45'000),  // in flight at the last fault
        delivery("c", 25'000), delivery("c", 26'000),  // between faults: unexplained
        delivery("d", 2'000),  delivery("d", 13'000),  // long before any fault: unexplained
        delivery("f", 30'000),                         // delivered once
    };
    const auto result = attribute_redeliveries(deliveries, faults, 5'000, 7'000);
    CHECK(result.total == 5);
    CHECK(result.per_fault == std::vector<std::int64_t>{1, 1, 1});
    REQUIRE(result.unexplained.size() == 2);
    for (const auto& [earlier, again] : result.unexplained) {
        CHECK((again.dispatch_key == "c" || again.dispatch_key == "d"));
    }
}

TEST_CASE("recovery counts from the end of a fault until the backlog is back where it was",
          "[unit][chaos]") {
    std::map<std::int64_t, std::int64_t> staged;
    std::map<std::int64_t, std::int64_t> done;
    // 200 rows/s staged all along; done keeps up until 10 s, stops until 13.5 s, then
    // catches up at 400 rows/s until the 700 rows left behind are done (at 17 s).
    for (std::int64_t t = 0; t < 30'000; t += 100) {
        staged[t] = 20;
        if (t < 10'000 || t >= 17'000) {
            done[t] = 20;
        } else if (t >= 13'500) {
            done[t] = 40;
        }
    }
    const DoneRate rate{done, staged, 100};
    CHECK(rate.rate(0, 5'000) == Approx(200));
    CHECK(rate.backlog(10'000) == 0);
    CHECK(rate.backlog(13'500) == 700);
    const auto recovery = rate.recovery(10'000, 12'000, 30'000, 5'000);
    CHECK(recovery.pre_rate == Approx(200));
    CHECK(recovery.min_rate == Approx(0));
    CHECK(recovery.peak_backlog == 700);
    REQUIRE(recovery.seconds);
    // Within half a second of staging (100 rows) of no backlog from 16.5 s on.
    CHECK(*recovery.seconds == Approx(4.5));
    CHECK(*recovery.since_start == Approx(6.5));
    CHECK_FALSE(rate.recovery(10'000, 11'000, 13'000, 5'000).seconds);
    CHECK(*rate.recovery(20'000, 21'000, 30'000, 5'000).seconds == Approx(0));
}

TEST_CASE("fault lists name known faults only", "[unit][chaos]") {
    CHECK(parse_fault_list("kill-node,hostile") ==
          std::vector<FaultKind>{FaultKind::kill_node, FaultKind::hostile});
    CHECK(parse_fault_list("pg-fast,,pg-immediate").size() == 2);
    CHECK_THROWS_AS(parse_fault_list("kill-node,meteor"), std::invalid_argument);
    CHECK_THROWS_AS(parse_fault_list(""), std::invalid_argument);
    CHECK(parse_fault_list("switchover,outage,pgbouncer-restart") ==
          std::vector<FaultKind>{FaultKind::switchover, FaultKind::outage,
                                 FaultKind::pgbouncer_restart});
    CHECK(all_faults().size() == 10);
    for (const auto kind : all_faults()) {
        CHECK(parse_fault_list(name_of(kind)) == std::vector<FaultKind>{kind});
        CHECK_FALSE(description_of(kind).empty());
    }
}

TEST_CASE("redeliveries are summed by kind of fault, kinds in the order first injected",
          "[unit][chaos]") {
    const std::vector<FaultKind> kinds{FaultKind::switchover, FaultKind::kill_node,
                                       FaultKind::outage, FaultKind::switchover};
    const auto by_kind = redeliveries_by_kind(kinds, {3, 0, 7, 2});
    REQUIRE(by_kind.size() == 3);
    CHECK(by_kind[0].kind == FaultKind::switchover);
    CHECK(by_kind[0].faults == 2);
    CHECK(by_kind[0].redeliveries == 5);
    CHECK(by_kind[1].kind == FaultKind::kill_node);
    CHECK(by_kind[1].faults == 1);
    CHECK(by_kind[1].redeliveries == 0);
    CHECK(by_kind[2].kind == FaultKind::outage);
    CHECK(by_kind[2].redeliveries == 7);
    CHECK(redeliveries_by_kind({}, {}).empty());
}

TEST_CASE("clients get one server's URL, or every server with the writable one chosen",
          "[unit][chaos]") {
    CHECK(database_url({25801}) == "postgresql://postgres@127.0.0.1:25801/postgres");
    CHECK(database_url({25801, 26002}) ==
          "host=127.0.0.1,127.0.0.1 port=25801,26002 dbname=postgres user=postgres "
          "target_session_attrs=read-write");
    CHECK_THROWS_AS(database_url({}), std::invalid_argument);
}

TEST_CASE("client frames are masked with the length in the smallest field that fits",
          "[unit][chaos]") {
    const auto small = ws_frame("hi");
    CHECK(static_cast<unsigned char>(small[0]) == 0x81);
    CHECK(static_cast<unsigned char>(small[1]) == (0x80 | 2));
    CHECK(small.size() == 2 + 4 + 2);
    const auto medium = ws_frame(std::string(300, 'x'));
    CHECK(static_cast<unsigned char>(medium[1]) == (0x80 | 126));
    CHECK(medium.size() == 4 + 4 + 300);
    const auto large = ws_frame(std::string(70'000, 'x'));
    CHECK(static_cast<unsigned char>(large[1]) == (0x80 | 127));
    const auto lie = ws_frame("{", WsFrameShape{kWsFin | kWsText, false, 1ULL << 63});
    CHECK(lie.size() == 2 + 8 + 1);
}

TEST_CASE("server frames are taken whole, text ones returned", "[unit][chaos]") {
    std::string buffer{
        "\x81\x05hello\x89\x00\x81\x03"
        "ab",
        13};
    bool complete = false;
    CHECK(take_server_text(buffer, complete) == std::optional<std::string>{"hello"});
    CHECK(complete);
    CHECK_FALSE(take_server_text(buffer, complete));  // the ping
    CHECK(complete);
    CHECK_FALSE(take_server_text(buffer, complete));  // cut short
    CHECK_FALSE(complete);
    CHECK(buffer.size() == 4);
}
