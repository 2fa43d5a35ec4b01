#include "outboxd/cluster/shard_share.hpp"

#include <algorithm>

namespace outboxd::cluster {

std::int32_t fair_share(std::size_t index, std::size_t members) {
    if (members == 0 || index >= members) return 0;
    const auto m = static_cast<std::int32_t>(members);
    const auto i = static_cast<std::int32_t>(index);
    return store::kShardCount / m + (i < store::kShardCount % m ? 1 : 0);
}

store::ShardRanges sticky_share(std::string_view self, const store::ShardRanges& held,
                                std::vector<MemberHolding> members,
                                const store::ShardRanges& owned) {
    std::sort(members.begin(), members.end(),
              [](const auto& a, const auto& b) { return a.node_id < b.node_id; });
    const auto me = std::find_if(members.begin(), members.end(),
                                 [&](const auto& m) { return m.node_id == self; });
    if (me == members.end()) return store::ShardRanges::none();
    me->held = held.count();
    const auto mine = fair_share(static_cast<std::size_t>(me - members.begin()), members.size());
    if (held.count() >= mine) return held.slice(0, mine);

    const auto free = store::ShardRanges::all().subtract(owned.unite(held));
    std::int32_t handed = 0;
    for (std::size_t i = 0; i < members.size(); ++i) {
        const auto shortfall = std::max(0, fair_share(i, members.size()) - members[i].held);
        if (members[i].node_id == self) return held.unite(free.slice(handed, shortfall));
        handed += shortfall;
    }
    return held;  // not reached: self is a member
}

}  // namespace outboxd::cluster
