#pragma once

// Namespace placement (tenant control, stored with the namespace's settings): which workers
// may run a namespace's unpinned rows.
// A row's own `node` always wins; placement never rewrites a row.

#include <string>
#include <string_view>
#include <vector>

namespace outboxd::store {

enum class PlacementMode {
    unplaced,  // any worker of the pool
    prefer,    // workers labelled with one of `nodes`; any worker when none of them is up
    pinned,    // only workers labelled with one of `nodes`; otherwise wait
};

struct Placement {
    PlacementMode mode = PlacementMode::unplaced;
    std::vector<std::string> nodes;

    friend bool operator==(const Placement&, const Placement&) = default;
};

[[nodiscard]] std::string_view to_string(PlacementMode mode) noexcept;
// Returns false for an unknown token.
[[nodiscard]] bool parse_placement_mode(std::string_view token, PlacementMode& mode) noexcept;

}  // namespace outboxd::store
