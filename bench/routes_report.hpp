#pragma once

// The report's section for the many-route and tenant scenarios (idle_routes, tenants,
// weighted, quiet_tenant): its lines of the table and its keys of the JSON object.

#include <string>

#include <nlohmann/json.hpp>

#include "bench_report.hpp"

namespace outboxd::bench {

// Empty when none of those scenarios ran.
[[nodiscard]] std::string render_routes_table(const BenchSettings& settings,
                                              const BenchReport& report);

// Adds the section's keys to `out`; the headline keys are always there (null when their
// scenario did not run or gave no figure).
void add_routes_json(nlohmann::json& out, const BenchReport& report);

}  // namespace outboxd::bench
