#pragma once

// What a chaos run does: the mode's profile (quick for CI, full by default), overridden by
// flags. Parsed once in main; read-only afterwards.

#include <chrono>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "fault_kind.hpp"

namespace outboxd::chaos {

struct ChaosSettings {
    bool quick = false;
    bool keep = false;  // keep the scratch directory even when the run passes
    std::vector<FaultKind> faults = all_faults();
    int rounds = 2;  // each fault this many times, in turn

    // Load and fleet.
    double rows_per_s = 300;
    int nodes = 3;
    int workers = 3;
    int worker_max_in_flight = 32;
    int max_task_ms = 100;  // each task sleeps 0..this, so some are in flight at every fault

    // Node settings: short, so that faults resolve within a settle period.
    std::chrono::milliseconds lease_ttl{2000};
    std::chrono::milliseconds task_timeout{5000};
    std::chrono::milliseconds poll_interval{200};

    // Timeline.
    std::chrono::milliseconds warmup{10000};
    std::chrono::milliseconds settle{15000};          // after each fault
    std::chrono::milliseconds node_down{3000};        // kill-node: until the restart
    std::chrono::milliseconds drain_timeout{120000};  // backlog after the load stops

    std::string bin_dir;   // outboxd, outboxd-worker
    std::string pgtmp;     // scripts/pgtmp
    std::string work_dir;  // empty: a fresh /tmp/outboxd-chaos.XXXXXX, removed unless kept

    // A stop or a partition outlasts the lease by this much, so that other nodes take over.
    [[nodiscard]] std::chrono::milliseconds outage() const { return lease_ttl * 2; }
    // The outage fault: every lease lapses while no node can reach the database.
    [[nodiscard]] std::chrono::milliseconds database_outage() const { return lease_ttl * 3; }
    // Whether the run injects `kind`: the rig then sets up what it acts on (a standby for a
    // switchover, PgBouncer for its restart).
    [[nodiscard]] bool injects(FaultKind kind) const;
    // A delivery can have been caught by a fault from a task timeout before the fault began
    // (it was still in flight) to this long after the fault ended: a task delivered then
    // may still wait out its timeout, or lose its shard when the node's lease lapses or the
    // shard moves back to a node that returned. Settle periods are longer than this, so
    // that a redelivery long after every fault is not excused.
    [[nodiscard]] std::chrono::milliseconds fault_grace() const { return task_timeout + lease_ttl; }
};

// Parses argv. Returns the settings, or the exit code when the process should end at once
// (--help: 0, bad flags: 2, with the message on stderr).
[[nodiscard]] std::variant<ChaosSettings, int> parse_settings(int argc, char** argv);

}  // namespace outboxd::chaos
