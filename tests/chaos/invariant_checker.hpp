#pragma once

// Judges a finished run from the table, the audit trail and the delivery logs:
//   - every row staged is terminal and none is missing (lost = 0);
//   - no done was applied from a stale claim: each claim that ended in done was answered
//     `complete` under its own task id ("<row id>.<claim token>") by some worker. Workers
//     log a complete before sending it, so an applied outcome always has its line; a
//     missing line means the outcome came from an answer to another claim;
//   - a redelivery is explained when the previous delivery of its key was in flight around
//     a fault (from a task timeout before its start to fault_grace() after its end) and the
//     redelivery came after that fault began;
//   - no node exited unless killed, and the done rate recovered after each fault.

#include <cstdint>
#include <string>
#include <vector>

#include "audit_trail.hpp"
#include "chaos_result.hpp"
#include "chaos_settings.hpp"

namespace outboxd::chaos {

struct RunFacts {
    std::string database_url;
    std::int64_t acknowledged = 0;
    bool drained = false;
    std::vector<std::string> delivery_logs;
    std::vector<FaultRecord> faults;
    std::int64_t load_stopped_ms = 0;
    std::vector<NodeExit> node_exits;
    int worker_unexpected_exits = 0;
};

class InvariantChecker {
public:
    InvariantChecker(const ChaosSettings& settings, const AuditTrail& audit)
        : settings_(settings), audit_(audit) {}

    [[nodiscard]] ChaosResult check(const RunFacts& facts) const;

private:
    void check_rows(const RunFacts& facts, ChaosResult& result) const;
    void check_deliveries(const RunFacts& facts, ChaosResult& result) const;
    void check_recovery(const RunFacts& facts, ChaosResult& result) const;
    static void list_failures(ChaosResult& result);

    const ChaosSettings& settings_;
    const AuditTrail& audit_;
};

}  // namespace outboxd::chaos
