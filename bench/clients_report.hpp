#pragma once

// The report's section for the client workers (clients): the TypeScript and Python clients'
// e2e rates and Graphile Worker's beside them.

#include <string>

#include <nlohmann/json.hpp>

#include "bench_report.hpp"

namespace outboxd::bench {

// Empty when the scenario did not run.
[[nodiscard]] std::string render_clients_table(const BenchReport& report);

// Adds ts_worker_rows_per_s, graphile_batched_jobs_per_s, ts_vs_graphile and
// py_worker_rows_per_s (null when not measured) and their details.
void add_clients_json(nlohmann::json& out, const BenchReport& report);

}  // namespace outboxd::bench
