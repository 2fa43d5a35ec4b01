#pragma once

// The Python and TypeScript clients as workers, and Graphile Worker beside them (issue:
// "fast where users measure it"): the e2e drain of settings.rows no-op rows through one node
// with settings.worker_processes worker processes of the client (clients/typescript/bench/
// noop-worker.mjs, python3 -m outboxd.bench), and Graphile Worker draining as many no-op jobs
// in-process with its local queue and batched completions (clients/typescript/bench/
// graphile.mjs) on the same PostgreSQL server, same run. A client whose runtime or files are
// missing (no node, no npm ci) is skipped with the reason logged; its keys are then null.

#include <optional>
#include <string>

#include "bench_context.hpp"
#include "e2e_scenario.hpp"

namespace outboxd::bench {

struct ClientWorkersResult {
    std::optional<E2eResult> typescript;
    std::optional<E2eResult> python;
    std::optional<double> graphile_jobs_per_s;
    std::int64_t graphile_jobs = 0;
};

ClientWorkersResult run_client_workers(const BenchContext& context, const std::string& suffix);

}  // namespace outboxd::bench
