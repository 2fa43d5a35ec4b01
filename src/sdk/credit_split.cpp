#include "credit_split.hpp"

#include <algorithm>

#include "outboxd/worker/protocol.hpp"

namespace outboxd::sdk::detail {

std::vector<std::int32_t> split_credits(std::int32_t total, std::size_t connections) {
    std::vector<std::int32_t> shares(connections, 1);
    if (connections == 0 || total <= 0) return shares;
    const auto count = static_cast<std::int64_t>(connections);
    const auto base = total / count;
    const auto remainder = total % count;
    for (std::int64_t i = 0; i < count; ++i) {
        const auto share = base + (i < remainder ? 1 : 0);
        shares[static_cast<std::size_t>(i)] = static_cast<std::int32_t>(
            std::clamp<std::int64_t>(share, 1, worker::protocol::kMaxCreditWindow));
    }
    return shares;
}

}  // namespace outboxd::sdk::detail
