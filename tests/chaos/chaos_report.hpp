#pragma once

// Prints a run's result: a table per fault, the invariants, the failures, and as the last
// line one JSON object (also written to `json_path` when not empty).

#include <ostream>
#include <string>

#include "chaos_result.hpp"

namespace outboxd::chaos {

void print_report(std::ostream& out, const ChaosResult& result, std::int64_t run_start_ms,
                  const std::string& json_path);

}  // namespace outboxd::chaos
