#pragma once

// Many tenants at once: settings.tenant_rows rows dealt evenly over
// settings.tenant_namespaces namespaces (ns-0, …) × settings.tenant_queues task queues
// (q-0, …), so every route has an equal backlog, drained together through 1 node by one
// outboxd-worker process per task queue, each serving every namespace (one route per
// namespace and queue). The rate is measured as the e2e run's (the caller divides it by the
// 1-node e2e rate of the same benchmark). Fairness, from finished_at after the run: rows
// each namespace finished per settings.fairness_window_seconds window while every
// namespace still had a backlog (NamespaceShares), and the largest deviation of a share
// from 1/namespaces, relative to it.

#include <cstdint>
#include <string>

#include "bench_context.hpp"
#include "e2e_scenario.hpp"

namespace outboxd::bench {

struct TenantsResult {
    E2eResult drain;
    int windows = 0;            // fairness windows read
    double window_seconds = 0;  // their length (shorter than asked when partial)
    bool partial = false;       // the backlog span was shorter than one window
    bool together = true;       // every namespace had a backlog throughout the span
    double max_deviation = 0;   // max over windows and namespaces of |share − 1/N| ÷ (1/N)
    std::string worst_namespace;
    std::int64_t worst_rows = 0;   // its rows in the worst window
    std::int64_t window_rows = 0;  // all rows in the worst window

    [[nodiscard]] double rows_per_s() const { return drain.rows_per_s(); }
    [[nodiscard]] double foreign_cpu() const { return drain.foreign_cpu; }
};

TenantsResult run_tenants(const BenchContext& context, const std::string& tag);

}  // namespace outboxd::bench
