#pragma once

// The report's section for delivery controls (controls): its lines of the table and its keys
// of the JSON object.

#include <string>

#include <nlohmann/json.hpp>

#include "bench_report.hpp"

namespace outboxd::bench {

// Empty when the scenario did not run.
[[nodiscard]] std::string render_controls_table(const BenchReport& report);

// Adds the section's keys to `out`; the headline keys are always there (null when the
// scenario did not run).
void add_controls_json(nlohmann::json& out, const BenchReport& report);

}  // namespace outboxd::bench
