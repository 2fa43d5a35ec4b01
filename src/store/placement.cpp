#include "outboxd/store/placement.hpp"

namespace outboxd::store {

std::string_view to_string(PlacementMode mode) noexcept {
    switch (mode) {
        case PlacementMode::unplaced:
            return "unplaced";
        case PlacementMode::prefer:
            return "prefer";
        case PlacementMode::pinned:
            return "pinned";
    }
    return "unplaced";
}

bool parse_placement_mode(std::string_view token, PlacementMode& mode) noexcept {
    for (const auto candidate :
         {PlacementMode::unplaced, PlacementMode::prefer, PlacementMode::pinned}) {
        if (to_string(candidate) == token) {
            mode = candidate;
            return true;
        }
    }
    return false;
}

}  // namespace outboxd::store
