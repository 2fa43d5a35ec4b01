#pragma once

// What a chaos run found: the checker fills it, the report prints it.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "fault_injector.hpp"
#include "node_group.hpp"
#include "redeliveries.hpp"

namespace outboxd::chaos {

struct FaultOutcome {
    FaultRecord record;
    double pre_rate = 0;               // rows done per second over the seconds before the fault
    double min_rate = 0;               // lowest one-second done rate from the fault to its recovery
    std::int64_t peak_backlog = 0;     // most rows staged and not done, from the fault to recovery
    std::optional<double> recovery_s;  // to catch up on the backlog; empty: not in time
    std::optional<double> catch_up_s;  // the same, counted from the fault's start
    std::int64_t redeliveries = 0;     // redeliveries attributed to this fault
    int node_exits = 0;                // unexpected node exits from its start to the next fault
};

struct ChaosResult {
    std::string mode;
    double duration_s = 0;

    // Rows.
    std::int64_t rows = 0;          // in the table at the end: the truth of what was staged
    std::int64_t acknowledged = 0;  // rows whose staging commit the load saw acknowledged
    std::int64_t missing = 0;       // acknowledged, yet not in the table
    std::int64_t unfinished = 0;    // in the table, still pending or claimed
    std::int64_t lost = 0;          // missing + unfinished
    std::int64_t done = 0, failed = 0, cancelled = 0;
    bool drained = false;

    // Outcomes and deliveries.
    std::int64_t stale_outcomes_applied = 0;
    std::int64_t overlapping_claims = 0;
    std::int64_t rows_done_twice = 0;
    std::int64_t deliveries = 0;
    std::int64_t duplicates = 0;  // deliveries beyond the first per dispatch key
    std::int64_t unexplained_redeliveries = 0;
    std::vector<KindRedeliveries> duplicates_by_kind;  // the explained ones
    std::int64_t malformed_log_lines = 0;
    std::vector<std::string> examples;  // a few offending rows, for the report

    // Processes.
    std::vector<NodeExit> node_exits;  // unexpected ones
    int worker_unexpected_exits = 0;
    int unresponsive_nodes = 0;

    std::vector<FaultOutcome> faults;
    double recovery_s_max = 0;
    double catch_up_s_max = 0;
    int not_recovered = 0;

    std::vector<std::string> failures;  // each broken invariant, spelled out
    [[nodiscard]] bool pass() const { return failures.empty(); }
};

}  // namespace outboxd::chaos
