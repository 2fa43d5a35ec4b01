#include "fault_kind.hpp"

#include <array>
#include <stdexcept>
#include <utility>

namespace outboxd::chaos {

namespace {

constexpr std::array<std::pair<FaultKind, std::string_view>, 7> kNames{{
    {FaultKind::kill_node, "kill-node"},
    {FaultKind::stop_node, "stop-node"},
    {FaultKind::pg_fast, "pg-fast"},
    {FaultKind::pg_immediate, "pg-immediate"},
    {FaultKind::partition, "partition"},
    {FaultKind::kill_worker, "kill-worker"},
    {FaultKind::hostile, "hostile"},
}};

}  // namespace

std::string_view name_of(FaultKind kind) {
    for (const auto& [k, name] : kNames) {
        if (k == kind) return name;
    }
    return "unknown";
}

const std::vector<FaultKind>& all_faults() {
    static const std::vector<FaultKind> kinds = [] {
        std::vector<FaultKind> out;
        for (const auto& [kind, name] : kNames) out.push_back(kind);
        return out;
    }();
    return kinds;
}

std::vector<FaultKind> parse_fault_list(std::string_view list) {
    std::vector<FaultKind> out;
    while (!list.empty()) {
        const auto comma = list.find(',');
        const auto item = list.substr(0, comma);
        list = comma == std::string_view::npos ? std::string_view{} : list.substr(comma + 1);
        if (item.empty()) continue;
        bool known = false;
        for (const auto& [kind, name] : kNames) {
            if (name == item) {
                out.push_back(kind);
                known = true;
            }
        }
        if (!known) {
            std::string names;
            for (const auto& [kind, name] : kNames)
                names += (names.empty() ? "" : ", ") + std::string{name};
            throw std::invalid_argument("--faults: unknown fault '" + std::string{item} +
                                        "' (known: " + names + ")");
        }
    }
    if (out.empty()) throw std::invalid_argument("--faults: names no fault");
    return out;
}

}  // namespace outboxd::chaos
