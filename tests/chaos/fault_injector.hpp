#pragma once

// Injects one fault into a running rig and records when it began and ended (unix ms): the
// checker attributes redeliveries, exits and the dip in the done rate to these windows.
// Main thread only, like the rig.

#include <cstdint>
#include <string>

#include "chaos_rig.hpp"
#include "chaos_settings.hpp"
#include "fault_kind.hpp"

namespace outboxd::chaos {

struct FaultRecord {
    FaultKind kind = FaultKind::kill_node;
    std::string target;  // node id, worker name, server ("postgres", "pg-1"…), "pgbouncer", …
    std::int64_t start_ms = 0;
    std::int64_t end_ms = 0;     // when the harness stopped injecting (restart, SIGCONT, …)
    std::string note;            // what was observed while injecting
    bool injected = true;        // false when the fault could not be applied as planned
    int unresponsive_nodes = 0;  // hostile: nodes not answering /healthz afterwards
};

class FaultInjector {
public:
    FaultInjector(ChaosRig& rig, const ChaosSettings& settings) : rig_(rig), settings_(settings) {}

    // `sequence` picks the target: faults rotate over nodes and workers.
    FaultRecord inject(FaultKind kind, int sequence);

private:
    void kill_node(FaultRecord& record, std::size_t node);
    void stop_node(FaultRecord& record, std::size_t node);
    void restart_postgres(FaultRecord& record, const char* mode);
    void outage(FaultRecord& record);
    void switchover(FaultRecord& record);
    void restart_pgbouncer(FaultRecord& record);
    void partition(FaultRecord& record, std::size_t node);
    void kill_worker(FaultRecord& record, std::size_t first_choice);
    void hostile(FaultRecord& record);

    ChaosRig& rig_;
    const ChaosSettings& settings_;
};

}  // namespace outboxd::chaos
