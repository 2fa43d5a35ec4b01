#pragma once

// Which shards one member should hold, decided from one view of the cluster. Sticky: a member
// keeps what it holds up to its fair share and gives up only its excess; a member short of
// its share takes free shards (nobody's, or a dead node's). Every member computes the same
// split of the free shards from the same view, so after a kill the survivors take disjoint
// parts of the dead node's shards in one tick and move nothing among themselves.
//
// Pure: no I/O, no clock.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "outboxd/store/shard_ranges.hpp"

namespace outboxd::cluster {

struct MemberHolding {
    std::string node_id;
    std::int32_t held = 0;  // how many shards it owns now
};

// The fair share of each of `members` (by node id, ascending): 1024 / m each, one more for
// the first 1024 % m.
[[nodiscard]] std::int32_t fair_share(std::size_t index, std::size_t members);

// The shards `self` should hold. `members`: every member that takes shards, `self` included
// (any order, node ids unique); `held`: what `self` owns now; `owned`: every shard a live
// node owns (members, draining nodes and `self`). A member over its share keeps its lowest
// shards; one under it adds its part of the free shards, handed out in node id order, each
// short member its shortfall, lowest shards first.
[[nodiscard]] store::ShardRanges sticky_share(std::string_view self, const store::ShardRanges& held,
                                              std::vector<MemberHolding> members,
                                              const store::ShardRanges& owned);

}  // namespace outboxd::cluster
