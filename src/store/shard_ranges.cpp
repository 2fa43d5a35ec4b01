#include "outboxd/store/shard_ranges.hpp"

#include <algorithm>
#include <stdexcept>

namespace outboxd::store {

ShardRanges::ShardRanges(std::vector<Range> ranges) {
    for (const auto& [lo, hi] : ranges) {
        if (lo < 0 || hi >= kShardCount || lo > hi) {
            throw std::invalid_argument("shard range [" + std::to_string(lo) + "," +
                                        std::to_string(hi) + "] is not within 0.." +
                                        std::to_string(kShardCount - 1));
        }
    }
    std::sort(ranges.begin(), ranges.end());
    for (const auto& range : ranges) {
        if (!ranges_.empty() && range.first <= ranges_.back().second + 1) {
            ranges_.back().second = std::max(ranges_.back().second, range.second);
        } else {
            ranges_.push_back(range);
        }
    }
}

ShardRanges ShardRanges::balanced_slice(std::size_t index, std::size_t members) {
    if (members == 0 || index >= members) return {};
    // The first (kShardCount % members) members get one extra shard.
    const auto base = static_cast<std::int32_t>(kShardCount / members);
    const auto extra = static_cast<std::int32_t>(kShardCount % members);
    const auto i = static_cast<std::int32_t>(index);
    const std::int32_t lo = i * base + std::min(i, extra);
    const std::int32_t size = base + (i < extra ? 1 : 0);
    if (size == 0) return {};
    return ShardRanges{{{lo, lo + size - 1}}};
}

ShardRanges ShardRanges::from_shards(const std::vector<std::int32_t>& shards) {
    std::vector<Range> ranges;
    ranges.reserve(shards.size());
    for (const auto shard : shards) ranges.emplace_back(shard, shard);
    return ShardRanges{std::move(ranges)};
}

std::int32_t ShardRanges::count() const noexcept {
    std::int32_t total = 0;
    for (const auto& [lo, hi] : ranges_) total += hi - lo + 1;
    return total;
}

bool ShardRanges::contains(std::int32_t shard) const noexcept {
    return std::any_of(ranges_.begin(), ranges_.end(),
                       [shard](const Range& r) { return r.first <= shard && shard <= r.second; });
}

ShardRanges ShardRanges::intersect(const ShardRanges& other) const {
    std::vector<Range> out;
    for (const auto& [a_lo, a_hi] : ranges_) {
        for (const auto& [b_lo, b_hi] : other.ranges_) {
            const auto lo = std::max(a_lo, b_lo);
            const auto hi = std::min(a_hi, b_hi);
            if (lo <= hi) out.emplace_back(lo, hi);
        }
    }
    return ShardRanges{std::move(out)};
}

ShardRanges ShardRanges::subtract(const ShardRanges& other) const {
    std::vector<Range> out;
    for (auto [lo, hi] : ranges_) {
        for (const auto& [b_lo, b_hi] : other.ranges_) {
            if (b_hi < lo || b_lo > hi) continue;
            if (b_lo > lo) out.emplace_back(lo, b_lo - 1);
            lo = b_hi + 1;
            if (lo > hi) break;
        }
        if (lo <= hi) out.emplace_back(lo, hi);
    }
    return ShardRanges{std::move(out)};
}

ShardRanges ShardRanges::unite(const ShardRanges& other) const {
    std::vector<Range> both = ranges_;
    both.insert(both.end(), other.ranges_.begin(), other.ranges_.end());
    return ShardRanges{std::move(both)};
}

ShardRanges ShardRanges::slice(std::int32_t skip, std::int32_t count) const {
    std::vector<Range> out;
    for (const auto& [lo, hi] : ranges_) {
        if (count <= 0) break;
        const std::int32_t size = hi - lo + 1;
        if (skip >= size) {
            skip -= size;
            continue;
        }
        const std::int32_t from = lo + std::max(skip, 0);
        const std::int32_t to = std::min(hi, from + count - 1);
        out.emplace_back(from, to);
        count -= to - from + 1;
        skip = 0;
    }
    return ShardRanges{std::move(out)};
}

std::string ShardRanges::to_multirange() const {
    std::string text = "{";
    for (const auto& [lo, hi] : ranges_) {
        if (text.size() > 1) text += ',';
        text += '[' + std::to_string(lo) + ',' + std::to_string(hi + 1) + ')';
    }
    return text + "}";
}

std::string ShardRanges::to_string() const {
    std::string text;
    for (const auto& [lo, hi] : ranges_) {
        if (!text.empty()) text += ',';
        text += std::to_string(lo) + '-' + std::to_string(hi);
    }
    return text.empty() ? "none" : text;
}

}  // namespace outboxd::store
