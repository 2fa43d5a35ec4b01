#pragma once

// HTTP push (README, "HTTP push"): one node pushing to a local outboxd-receiver process with
// a no-op handler (keep-alive, answers 200 at once), against the same rows over WebSocket to
// the usual outboxd-worker processes in the same run; and the latency of HTTP push at a
// steady rate, commit -> request received by an endpoint in the driver.

#include <string>

#include "bench_context.hpp"
#include "e2e_scenario.hpp"
#include "latency_scenario.hpp"

namespace outboxd::bench {

// settings.http_rows rows drained by one node into an HTTP target (settings.http_max_in_flight).
E2eResult run_http_push(const BenchContext& context, const std::string& tag);

// As run_latency, the tasks POSTed to an HTTP endpoint of the driver.
LatencyResult run_http_latency(const BenchContext& context);

}  // namespace outboxd::bench
