#include "redeliveries.hpp"

#include <algorithm>
#include <optional>
#include <unordered_map>

namespace outboxd::chaos {

Redeliveries attribute_redeliveries(const std::vector<Delivery>& deliveries,
                                    const std::vector<FaultWindow>& faults,
                                    std::int64_t lookback_ms, std::int64_t grace_ms) {
    Redeliveries out;
    out.per_fault.assign(faults.size(), 0);
    std::unordered_map<std::string, std::vector<const Delivery*>> by_key;
    for (const auto& delivery : deliveries) by_key[delivery.dispatch_key].push_back(&delivery);
    for (auto& [key, of_key] : by_key) {
        std::stable_sort(of_key.begin(), of_key.end(),
                         [](const Delivery* a, const Delivery* b) { return a->at_ms < b->at_ms; });
        for (std::size_t i = 1; i < of_key.size(); ++i) {
            ++out.total;
            const auto& earlier = *of_key[i - 1];
            const auto& again = *of_key[i];
            std::optional<std::size_t> cause;
            for (std::size_t f = 0; f < faults.size(); ++f) {
                const auto& fault = faults[f];
                if (earlier.at_ms >= fault.start_ms - lookback_ms &&
                    earlier.at_ms <= fault.end_ms + grace_ms && again.at_ms >= fault.start_ms &&
                    (!cause || fault.start_ms >= faults[*cause].start_ms)) {
                    cause = f;
                }
            }
            if (cause) {
                ++out.per_fault[*cause];
            } else {
                out.unexplained.emplace_back(earlier, again);
            }
        }
    }
    return out;
}

std::vector<KindRedeliveries> redeliveries_by_kind(const std::vector<FaultKind>& kinds,
                                                   const std::vector<std::int64_t>& per_fault) {
    std::vector<KindRedeliveries> out;
    for (std::size_t i = 0; i < kinds.size(); ++i) {
        auto it = std::find_if(out.begin(), out.end(),
                               [&](const KindRedeliveries& k) { return k.kind == kinds[i]; });
        if (it == out.end()) it = out.insert(out.end(), KindRedeliveries{kinds[i], 0, 0});
        ++it->faults;
        if (i < per_fault.size()) it->redeliveries += per_fault[i];
    }
    return out;
}

}  // namespace outboxd::chaos
