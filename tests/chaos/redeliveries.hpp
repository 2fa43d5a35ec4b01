#pragma once

// Which fault caused each redelivery. A delivery of a key after an earlier one is explained
// by a fault when the earlier delivery began within [start - lookback, end + grace] of that
// fault (it was in flight at the fault or shortly after) and the redelivery came after the
// fault began. When windows overlap, the latest fault that fits is taken.

#include <cstdint>
#include <string>
#include <vector>

#include "delivery_log.hpp"
#include "fault_kind.hpp"

namespace outboxd::chaos {

struct FaultWindow {
    std::int64_t start_ms = 0;
    std::int64_t end_ms = 0;
};

struct Redeliveries {
    std::int64_t total = 0;               // deliveries beyond the first per dispatch key
    std::vector<std::int64_t> per_fault;  // explained ones, by index into the windows
    // Unexplained ones: (earlier delivery, redelivery).
    std::vector<std::pair<Delivery, Delivery>> unexplained;
};

[[nodiscard]] Redeliveries attribute_redeliveries(const std::vector<Delivery>& deliveries,
                                                  const std::vector<FaultWindow>& faults,
                                                  std::int64_t lookback_ms, std::int64_t grace_ms);

struct KindRedeliveries {
    FaultKind kind = FaultKind::kill_node;
    int faults = 0;                 // faults of this kind injected
    std::int64_t redeliveries = 0;  // the explained redeliveries of all of them
};

// Redeliveries per fault (`per_fault[i]` for the fault of kind `kinds[i]`) summed by kind,
// each kind once, in the order the run first injected it.
[[nodiscard]] std::vector<KindRedeliveries> redeliveries_by_kind(
    const std::vector<FaultKind>& kinds, const std::vector<std::int64_t>& per_fault);

}  // namespace outboxd::chaos
