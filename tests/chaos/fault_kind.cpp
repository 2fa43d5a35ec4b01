#include "fault_kind.hpp"

#include <array>
#include <stdexcept>

namespace outboxd::chaos {

namespace {

struct KindInfo {
    FaultKind kind;
    std::string_view name;
    std::string_view description;
};

constexpr std::array<KindInfo, 10> kKinds{{
    {FaultKind::kill_node, "kill-node",
     "kill -9 of a node, restarted under the same id a few seconds later"},
    {FaultKind::stop_node, "stop-node", "SIGSTOP of a node for 2x the lease TTL, then SIGCONT"},
    {FaultKind::pg_fast, "pg-fast", "pg_ctl restart -m fast of the primary"},
    {FaultKind::pg_immediate, "pg-immediate",
     "pg_ctl restart -m immediate of the primary (crash recovery)"},
    {FaultKind::outage, "outage",
     "the primary stopped (-m fast) for 3x the lease TTL, then started again"},
    {FaultKind::switchover, "switchover",
     "the primary stopped (-m fast), its synchronous standby promoted"},
    {FaultKind::pgbouncer_restart, "pgbouncer-restart",
     "PgBouncer in front of the primary restarted (SIGTERM, same port)"},
    {FaultKind::partition, "partition", "one node cut from PostgreSQL for 2x the lease TTL"},
    {FaultKind::kill_worker, "kill-worker",
     "kill -9 of a worker with tasks in flight, then a new worker"},
    {FaultKind::hostile, "hostile", "garbage from a hostile client to every node"},
}};

const KindInfo& info_of(FaultKind kind) {
    for (const auto& info : kKinds) {
        if (info.kind == kind) return info;
    }
    throw std::invalid_argument("unknown fault kind");
}

}  // namespace

std::string_view name_of(FaultKind kind) { return info_of(kind).name; }

std::string_view description_of(FaultKind kind) { return info_of(kind).description; }

const std::vector<FaultKind>& all_faults() {
    static const std::vector<FaultKind> kinds = [] {
        std::vector<FaultKind> out;
        for (const auto& info : kKinds) out.push_back(info.kind);
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
        for (const auto& info : kKinds) {
            if (info.name == item) {
                out.push_back(info.kind);
                known = true;
            }
        }
        if (!known) {
            std::string names;
            for (const auto& info : kKinds)
                names += (names.empty() ? "" : ", ") + std::string{info.name};
            throw std::invalid_argument("--faults: unknown fault '" + std::string{item} +
                                        "' (known: " + names + ")");
        }
    }
    if (out.empty()) throw std::invalid_argument("--faults: names no fault");
    return out;
}

}  // namespace outboxd::chaos
