#pragma once

// How a worker's credit window is shared over its node connections. Kept in one function so
// that a smarter policy (towards nodes with backlog) can replace it in one place.

#include <cstddef>
#include <cstdint>
#include <vector>

namespace outboxd::sdk::detail {

// Splits `total` over `connections` live connections, in connection order: equal shares,
// the remainder one each to the first ones, and at least 1 each (a hello must ask for at
// least one task) even when that exceeds `total`. Shares never exceed
// protocol::kMaxCreditWindow.
[[nodiscard]] std::vector<std::int32_t> split_credits(std::int32_t total, std::size_t connections);

}  // namespace outboxd::sdk::detail
