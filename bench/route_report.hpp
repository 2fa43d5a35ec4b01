#pragma once

// What the many-route scenarios (idle_routes, tenants, weighted, quiet_tenant) share in the
// report: the heading of their group of the table, and for the ratios of idle_routes and
// tenants the 1-route rate (the e2e scenario's 1-node runs) and what a drain's row cost says.
//
// Each ratio is the median of same-repetition pairs, as each many-route run follows its own
// 1-route run within a minute: a shared machine drifts by more than the targets' margins
// within a full run (2026-12-02: the floor loop 24,782 -> 12,486 rows/s), and a ratio of
// two medians may divide runs made 10 minutes apart, measuring the drift.

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "e2e_drain.hpp"
#include "report_table.hpp"

namespace outboxd::bench {

class E2eScenario;

inline constexpr const char* kRoutesHeading = "\nMany routes and tenants (1 node)\n";

// The nodes' claim rounds: milliseconds each and rows each (0 without rounds).
[[nodiscard]] double ms_per_round(const E2eResult& run);
[[nodiscard]] double rows_per_round(const E2eResult& run);

// What a row cost: tells a many-route run's own cost apart from drift of the machine.
[[nodiscard]] std::string drain_note(const E2eResult& run);

// Ratios to 3 decimals, comma-separated.
[[nodiscard]] std::string ratio_list(const std::vector<double>& values);

// The 1-route rate the table shows beside the ratios: the e2e 1-node median of this run,
// when above 0.
[[nodiscard]] std::optional<double> one_route_rate(const E2eScenario& e2e);

// The table's part `one_route` (the 1-route rate and its cost) and the keys one_route_*,
// when the 1-node runs exist. Both idle_routes and tenants write them, when they ran.
void put_one_route(const E2eScenario& e2e, ReportTable& table);
void add_one_route_json(const E2eScenario& e2e, nlohmann::json& out);

}  // namespace outboxd::bench
