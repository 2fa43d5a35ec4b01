#pragma once

// Latency at a steady rate, the measurement the latency scenarios share: an in-process
// "application" commits one row per transaction at settings.latency_rate rows/s (open loop:
// row i is due at start + i / rate, spread over a few stager connections so a slow fsync
// does not slow the schedule), one outboxd node dispatches, and a receiver (the latency
// scenario's in-process SDK WorkerClient, the HTTP push scenario's endpoint) records when
// each task arrives. Latency = task received - COMMIT returned, both read from steady_clock
// in this process. Rows of the warm-up are staged but not counted. If commits cannot keep
// the rate (the wake trigger's NOTIFY serialises committers), the stagers stop at twice
// the planned time: the achieved rate says so.

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "bench_context.hpp"

namespace outboxd::bench {

struct LatencyResult {
    std::int64_t planned = 0;  // rows due after the warm-up
    std::int64_t rows = 0;     // of those, staged (committed) before the cap
    std::int64_t missing = 0;  // counted rows not received within the drain timeout
    double achieved_rate = 0;  // rows/s the stagers committed
    double p50_ms = 0;
    double p90_ms = 0;
    double p99_ms = 0;
    double max_ms = 0;
    double node_cpu_share = 0;  // node CPU seconds per second of the run
};

class NodeFleet;
// Tells the run that the task of `dispatch_key` arrived (any thread; the first arrival counts).
using Arrival = std::function<void(std::string_view dispatch_key)>;
// The receiving side of a latency run: started once the node is up, calling `arrived` for
// every task; returns once it is ready, with the function that stops it.
using LatencyReceiver =
    std::function<std::function<void()>(NodeFleet& fleet, const Arrival& arrived)>;
// The latency run of `tag`, `receiver` taking the tasks.
LatencyResult measure_latency(const BenchContext& context, const std::string& tag,
                              const LatencyReceiver& receiver);

}  // namespace outboxd::bench
