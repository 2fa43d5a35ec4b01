#include <catch2/catch.hpp>

#include <map>
#include <numeric>

#include "outboxd/dispatch/fair_share.hpp"

using outboxd::dispatch::FairShare;
using Demand = FairShare::Demand;

namespace {

// Rows each namespace got over `rounds` rounds of `budget`, every namespace always backlogged.
std::map<std::string, std::int64_t> totals(FairShare& share, const std::vector<Demand>& demands,
                                           std::int64_t budget, int rounds) {
    std::map<std::string, std::int64_t> got;
    for (int r = 0; r < rounds; ++r) {
        const auto rows = share.deal(demands, budget);
        CHECK(std::accumulate(rows.begin(), rows.end(), std::int64_t{0}) <= budget);
        for (std::size_t i = 0; i < rows.size(); ++i) got[demands[i].namespace_name] += rows[i];
    }
    return got;
}

}  // namespace

TEST_CASE("equal weights share a batch equally, across rounds", "[unit][dispatch]") {
    FairShare share;
    std::vector<Demand> demands;
    for (int i = 0; i < 100; ++i) demands.push_back({"ns-" + std::to_string(i), 1, 1'000'000});
    const auto got = totals(share, demands, 256, 50);
    for (const auto& [ns, rows] : got) {
        INFO(ns);
        CHECK(rows >= 127);  // 256 × 50 / 100 = 128, give or take a row of rounding
        CHECK(rows <= 129);
    }
}

TEST_CASE("shares follow weights", "[unit][dispatch]") {
    FairShare share;
    const std::vector<Demand> demands{
        {"a", 1, 1'000'000}, {"b", 2, 1'000'000}, {"c", 4, 1'000'000}};
    const auto got = totals(share, demands, 256, 100);
    const double total = static_cast<double>(got.at("a") + got.at("b") + got.at("c"));
    CHECK(total == 25600);
    CHECK(got.at("a") / total == Approx(1.0 / 7).epsilon(0.01));
    CHECK(got.at("b") / total == Approx(2.0 / 7).epsilon(0.01));
    CHECK(got.at("c") / total == Approx(4.0 / 7).epsilon(0.01));
}

TEST_CASE("what one namespace cannot take goes to the others", "[unit][dispatch]") {
    FairShare share;
    const auto rows = share.deal({{"small", 1, 3}, {"big", 1, 1'000'000}}, 256);
    CHECK(rows[0] == 3);
    CHECK(rows[1] == 253);
    // Having taken all it could, the small one banks nothing for later.
    CHECK(share.owed("small") == 0.0);
}

TEST_CASE("a quiet namespace is served in the first round it has work, whatever the backlog",
          "[unit][dispatch]") {
    FairShare share;
    for (int r = 0; r < 20; ++r) (void)share.deal({{"busy", 1, 1'000'000}}, 256);
    const auto rows = share.deal({{"busy", 1, 1'000'000}, {"quiet", 1, 1}}, 256);
    CHECK(rows[1] == 1);
    CHECK(rows[0] == 255);
    // Among many busy ones too, while there are fewer of them than rows in a batch.
    std::vector<Demand> crowd;
    for (int i = 0; i < 200; ++i) crowd.push_back({"busy-" + std::to_string(i), 1, 1'000'000});
    for (int r = 0; r < 5; ++r) (void)share.deal(crowd, 256);
    crowd.push_back({"quiet", 1, 1});
    const auto crowded = share.deal(crowd, 256);
    CHECK(crowded.back() == 1);
}

TEST_CASE("nobody with work is left out for long when there are more namespaces than rows",
          "[unit][dispatch]") {
    FairShare share;
    std::vector<Demand> demands;
    for (int i = 0; i < 1000; ++i) demands.push_back({"ns-" + std::to_string(i), 1, 1'000'000});
    std::map<std::string, int> last_served;
    int longest_wait = 0;
    for (int r = 0; r < 40; ++r) {
        const auto rows = share.deal(demands, 256);
        for (std::size_t i = 0; i < rows.size(); ++i) {
            if (rows[i] == 0) continue;
            const auto& ns = demands[i].namespace_name;
            longest_wait =
                std::max(longest_wait, r - (last_served.contains(ns) ? last_served[ns] : -1));
            last_served[ns] = r;
        }
    }
    CHECK(last_served.size() == 1000);
    CHECK(longest_wait <= 5);  // 1000 / 256 rounds, rounded up, plus one of rounding
}

TEST_CASE("namespaces without room get nothing and lose what they were owed", "[unit][dispatch]") {
    FairShare share;
    (void)share.deal({{"a", 1, 1'000'000}, {"b", 5, 1'000'000}}, 10);
    const auto rows = share.deal({{"a", 1, 0}, {"b", 5, 1'000'000}}, 10);
    CHECK(rows[0] == 0);
    CHECK(rows[1] == 10);
    CHECK(share.owed("a") == 0.0);
    CHECK(share.deal({}, 10).empty());
}
