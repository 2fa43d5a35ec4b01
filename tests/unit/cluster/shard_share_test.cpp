#include <catch2/catch.hpp>

#include <map>
#include <set>

#include "outboxd/cluster/shard_share.hpp"

using outboxd::cluster::fair_share;
using outboxd::cluster::MemberHolding;
using outboxd::cluster::sticky_share;
using outboxd::store::kShardCount;
using outboxd::store::ShardRanges;

namespace {

using Holdings = std::map<std::string, ShardRanges>;

ShardRanges owned_by(const Holdings& holdings) {
    ShardRanges owned;
    for (const auto& [node, shards] : holdings) owned = owned.unite(shards);
    return owned;
}

// One round: every member decides from the same view, then gives up and takes what it
// decided (a take of a shard another took first fails, as in SQL). Returns shards moved.
int round(Holdings& holdings) {
    std::vector<MemberHolding> members;
    for (const auto& [node, shards] : holdings) members.push_back({node, shards.count()});
    const auto owned = owned_by(holdings);
    std::map<std::string, ShardRanges> targets;
    for (const auto& [node, shards] : holdings) {
        targets[node] = sticky_share(node, shards, members, owned);
    }
    int moved = 0;
    for (auto& [node, shards] : holdings) shards = shards.intersect(targets[node]);
    for (auto& [node, shards] : holdings) {
        auto wanted = targets[node].subtract(shards);
        for (const auto& [other, theirs] : holdings) {
            if (other != node) wanted = wanted.subtract(theirs);
        }
        moved += wanted.count();
        shards = shards.unite(wanted);
    }
    return moved;
}

bool balanced(const Holdings& holdings) {
    std::int32_t total = 0;
    const auto share = kShardCount / static_cast<int>(holdings.size());
    for (const auto& [node, shards] : holdings) {
        if (shards.count() < share || shards.count() > share + 1) return false;
        total += shards.count();
    }
    return total == kShardCount;
}

std::string name(int i) { return "node-" + std::string(i < 10 ? "0" : "") + std::to_string(i); }

}  // namespace

TEST_CASE("fair shares add up to every shard", "[unit][cluster]") {
    for (std::size_t members : {1u, 3u, 7u, 20u, 1024u, 1500u}) {
        std::int32_t total = 0;
        for (std::size_t i = 0; i < members; ++i) total += fair_share(i, members);
        CHECK(total == kShardCount);
    }
    CHECK(fair_share(0, 3) == 342);
    CHECK(fair_share(2, 3) == 341);
    CHECK(fair_share(3, 3) == 0);
}

TEST_CASE("slices of shard ranges count across gaps", "[unit][store]") {
    const ShardRanges ranges{{{0, 9}, {20, 29}}};
    CHECK(ranges.slice(0, 5) == ShardRanges{{{0, 4}}});
    CHECK(ranges.slice(8, 4) == ShardRanges{{{8, 9}, {20, 21}}});
    CHECK(ranges.slice(10, 100) == ShardRanges{{{20, 29}}});
    CHECK(ranges.slice(25, 3).empty());
    CHECK(ranges.slice(3, 0).empty());
}

TEST_CASE("members starting together split the shards in one round", "[unit][cluster]") {
    Holdings holdings;
    for (int i = 1; i <= 5; ++i) holdings[name(i)] = ShardRanges::none();
    CHECK(round(holdings) == kShardCount);
    CHECK(balanced(holdings));
    CHECK(round(holdings) == 0);  // stable
}

TEST_CASE("after a kill the survivors take only the dead node's shards, all in one round",
          "[unit][cluster]") {
    for (const auto& [nodes, killed] : std::vector<std::pair<int, std::vector<int>>>{
             {5, {3}}, {5, {1}}, {20, {3, 7, 11, 15, 19}}, {8, {1, 2}}, {3, {1, 2}}}) {
        INFO(nodes << " nodes");
        Holdings holdings;
        for (int i = 1; i <= nodes; ++i) holdings[name(i)] = ShardRanges::none();
        round(holdings);
        REQUIRE(balanced(holdings));
        std::int32_t freed = 0;
        for (const int k : killed) {
            freed += holdings[name(k)].count();
            holdings.erase(name(k));
        }
        const auto before = holdings;
        CHECK(round(holdings) == freed);
        CHECK(balanced(holdings));
        for (const auto& [node, shards] : before) {
            CHECK(shards.subtract(holdings[node]).empty());  // nobody gave anything up
        }
    }
}

TEST_CASE("a newcomer gets its share from the others' excess", "[unit][cluster]") {
    Holdings holdings;
    for (int i = 1; i <= 4; ++i) holdings[name(i * 2)] = ShardRanges::none();
    round(holdings);
    const auto before = holdings;
    holdings[name(5)] = ShardRanges::none();  // sorts among the others
    round(holdings);                          // the others give up their excess
    round(holdings);                          // the newcomer takes it
    CHECK(balanced(holdings));
    std::int32_t moved = 0;
    for (const auto& [node, shards] : before) moved += shards.subtract(holdings[node]).count();
    CHECK(moved == holdings[name(5)].count());  // only what the newcomer needed moved
}

TEST_CASE("a member missing from the members holds nothing", "[unit][cluster]") {
    CHECK(sticky_share("ghost", ShardRanges::all(), {{"node-1", 0}}, ShardRanges::all()).empty());
}
