#pragma once

// The report's section for results (results): what keeping workers' results costs the
// end-to-end rate.

#include <cstddef>
#include <string>

#include <nlohmann/json.hpp>

#include "bench_report.hpp"

namespace outboxd::bench {

// Every noop task of the results run answers a JSON string of this many bytes.
inline constexpr std::size_t kResultBytes = 1024;

// Empty when the scenario did not run.
[[nodiscard]] std::string render_results_table(const BenchReport& report);

// Adds the section's keys to `out`; result_cost is always there (null when it did not run).
void add_results_json(nlohmann::json& out, const BenchReport& report);

}  // namespace outboxd::bench
