#include <catch2/catch.hpp>

#include "outboxd/store/shard_ranges.hpp"

using outboxd::store::kShardCount;
using outboxd::store::ShardRanges;

TEST_CASE("shard ranges normalise: sorted, merged, adjacent joined", "[unit][store]") {
    const ShardRanges ranges{{{10, 20}, {0, 4}, {5, 9}, {15, 30}, {100, 100}}};
    CHECK(ranges.ranges() == std::vector<ShardRanges::Range>{{0, 30}, {100, 100}});
    CHECK(ranges.count() == 32);
    CHECK(ranges.contains(0));
    CHECK(ranges.contains(30));
    CHECK_FALSE(ranges.contains(31));
    CHECK(ranges.to_multirange() == "{[0,31),[100,101)}");
    CHECK(ranges.to_string() == "0-30,100-100");
}

TEST_CASE("shard ranges refuse shards outside 0..1023", "[unit][store]") {
    CHECK_THROWS_AS((ShardRanges{{{-1, 3}}}), std::invalid_argument);
    CHECK_THROWS_AS((ShardRanges{{{0, kShardCount}}}), std::invalid_argument);
    CHECK_THROWS_AS((ShardRanges{{{5, 4}}}), std::invalid_argument);
}

TEST_CASE("balanced slices partition every shard with no gap or overlap", "[unit][store]") {
    for (std::size_t members : {1u, 2u, 3u, 4u, 7u, 1000u, 1024u, 1500u}) {
        ShardRanges united;
        std::int32_t total = 0;
        std::int32_t smallest = kShardCount, largest = 0;
        for (std::size_t i = 0; i < members; ++i) {
            const auto slice = ShardRanges::balanced_slice(i, members);
            CHECK(slice.intersect(united).empty());
            total += slice.count();
            if (i < static_cast<std::size_t>(kShardCount)) {
                smallest = std::min(smallest, slice.count());
                largest = std::max(largest, slice.count());
            }
            std::vector<ShardRanges::Range> merged = united.ranges();
            for (const auto& r : slice.ranges()) merged.push_back(r);
            united = ShardRanges{merged};
        }
        CHECK(total == kShardCount);
        CHECK(united == ShardRanges::all());
        CHECK(largest - smallest <= 1);
    }
}

TEST_CASE("intersect and subtract", "[unit][store]") {
    const ShardRanges a{{{0, 99}, {200, 299}}};
    const ShardRanges b{{{50, 249}}};
    CHECK(a.intersect(b) == ShardRanges{{{50, 99}, {200, 249}}});
    CHECK(a.subtract(b) == ShardRanges{{{0, 49}, {250, 299}}});
    CHECK(a.subtract(ShardRanges::all()).empty());
    CHECK(ShardRanges::all().subtract(a).count() == kShardCount - 200);
    CHECK(ShardRanges::from_shards({3, 1, 2, 9}) == ShardRanges{{{1, 3}, {9, 9}}});
}
