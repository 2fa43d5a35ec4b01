#pragma once

// A set of shards as sorted, disjoint, inclusive ranges over 0..kShardCount-1.

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace outboxd::store {

inline constexpr std::int32_t kShardCount = 1024;

class ShardRanges {
public:
    using Range = std::pair<std::int32_t, std::int32_t>;  // inclusive [lo, hi]

    ShardRanges() = default;
    // Normalises: sorts, merges overlapping and adjacent ranges. Throws std::invalid_argument
    // for a range outside 0..kShardCount-1 or with lo > hi.
    explicit ShardRanges(std::vector<Range> ranges);

    [[nodiscard]] static ShardRanges all() { return ShardRanges{{{0, kShardCount - 1}}}; }
    [[nodiscard]] static ShardRanges none() { return {}; }
    // The contiguous range that member `index` of `members` gets in a balanced split.
    [[nodiscard]] static ShardRanges balanced_slice(std::size_t index, std::size_t members);
    [[nodiscard]] static ShardRanges from_shards(const std::vector<std::int32_t>& shards);

    [[nodiscard]] const std::vector<Range>& ranges() const noexcept { return ranges_; }
    [[nodiscard]] bool empty() const noexcept { return ranges_.empty(); }
    [[nodiscard]] std::int32_t count() const noexcept;
    [[nodiscard]] bool contains(std::int32_t shard) const noexcept;
    [[nodiscard]] ShardRanges intersect(const ShardRanges& other) const;
    [[nodiscard]] ShardRanges subtract(const ShardRanges& other) const;
    [[nodiscard]] ShardRanges unite(const ShardRanges& other) const;
    // The `count` shards that come after the first `skip`, in ascending order (fewer when
    // there are not that many).
    [[nodiscard]] ShardRanges slice(std::int32_t skip, std::int32_t count) const;

    // PostgreSQL int4multirange literal, e.g. "{[0,512),[768,1024)}".
    [[nodiscard]] std::string to_multirange() const;
    // "0-511,768-1023" for logs.
    [[nodiscard]] std::string to_string() const;

    friend bool operator==(const ShardRanges&, const ShardRanges&) = default;

private:
    std::vector<Range> ranges_;
};

}  // namespace outboxd::store
