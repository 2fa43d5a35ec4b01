#pragma once

// The faults the chaos harness injects, by the names `--faults` accepts.

#include <string>
#include <string_view>
#include <vector>

namespace outboxd::chaos {

enum class FaultKind {
    kill_node,          // kill -9 of a node, restarted under the same id a few seconds later
    stop_node,          // SIGSTOP of a node for longer than the lease TTL, then SIGCONT
    pg_fast,            // PostgreSQL restart -m fast
    pg_immediate,       // PostgreSQL restart -m immediate (crash recovery)
    outage,             // PostgreSQL stopped (-m fast) for 3x the lease TTL, then started
    switchover,         // the primary stopped, its synchronous standby promoted
    pgbouncer_restart,  // PgBouncer, which the nodes then reach PostgreSQL through, restarted
    partition,          // one node cut from PostgreSQL for longer than the lease TTL
    kill_worker,        // kill -9 of a worker with tasks in flight, then a new worker
    hostile,            // garbage from a hostile client to every node
};

[[nodiscard]] std::string_view name_of(FaultKind kind);
// One line on what the fault does, for --help.
[[nodiscard]] std::string_view description_of(FaultKind kind);
// Every kind, in the order a run injects them.
[[nodiscard]] const std::vector<FaultKind>& all_faults();
// Parses "kill-node,pg-fast,…"; throws std::invalid_argument naming an unknown entry.
[[nodiscard]] std::vector<FaultKind> parse_fault_list(std::string_view list);

}  // namespace outboxd::chaos
