#pragma once

// One busy route beside many idle ones: the e2e run of settings.rows rows in namespace
// `default` (1 node, the usual no-op outboxd-worker processes, the same clock), with one
// more outboxd-worker process connected before the clock starts whose hello lists
// settings.idle_routes namespaces (idle-0, idle-1, …) that have no rows: one route each.
// Its credit (2 per namespace) leaves every one of them free capacity, so each is a route
// the node may claim for in every round. The caller compares the rate with the 1-node e2e
// run of the same benchmark (the same rows and workers without the idle routes).

#include <string>

#include "bench_context.hpp"
#include "e2e_scenario.hpp"

namespace outboxd::bench {

E2eResult run_idle_routes(const BenchContext& context, const std::string& tag);

}  // namespace outboxd::bench
