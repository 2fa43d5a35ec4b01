#include "tenants_scenario.hpp"

#include <cmath>
#include <numeric>
#include <vector>

#include <spdlog/spdlog.h>

#include "namespace_shares.hpp"

namespace outboxd::bench {
namespace {

std::vector<std::string> names(const std::string& prefix, int count) {
    std::vector<std::string> out;
    for (int i = 0; i < count; ++i) out.push_back(prefix + std::to_string(i));
    return out;
}

}  // namespace

TenantsResult run_tenants(const BenchContext& context, const std::string& tag) {
    const auto& settings = context.settings;
    const auto namespaces = names("ns-", settings.tenant_namespaces);
    const auto queues = names("q-", settings.tenant_queues);
    const auto database = "bench_" + tag;
    const auto url = context.databases.create_migrated(database);
    spdlog::info("{}: staging {} rows over {} namespaces x {} task queues", tag,
                 settings.tenant_rows, namespaces.size(), queues.size());
    stage_routed_rows(url, settings.tenant_rows, "tenant-", namespaces, queues);
    settle(url);

    DrainOptions options;
    for (const auto& queue : queues) {
        options.workers.push_back(
            {"worker-" + queue, 1, namespaces, queue, settings.worker_max_in_flight});
    }
    TenantsResult result;
    result.drain = drain_e2e(context, url, 1, tag, options);

    const auto shares = read_namespace_shares(url, namespaces, settings.fairness_window_seconds);
    result.windows = static_cast<int>(shares.windows.size());
    result.window_seconds = shares.window_seconds;
    result.partial = shares.partial;
    result.together = shares.together;
    const std::vector<double> equal(namespaces.size(), 1.0);
    result.max_deviation = shares.windows.empty() ? 1.0 : 0.0;
    for (const auto& window : shares.windows) {
        const auto deviation = max_share_error(window, equal);
        if (deviation < result.max_deviation) continue;
        result.max_deviation = deviation;
        result.window_rows = std::accumulate(window.begin(), window.end(), std::int64_t{0});
        // The namespace furthest from its share names the deviation.
        const double fair = static_cast<double>(result.window_rows) / namespaces.size();
        double furthest = -1;
        for (std::size_t i = 0; i < window.size(); ++i) {
            const double off = std::abs(static_cast<double>(window[i]) - fair);
            if (off > furthest) {
                furthest = off;
                result.worst_namespace = namespaces[i];
                result.worst_rows = window[i];
            }
        }
    }
    spdlog::info(
        "{}: {:.0f} rows/s; fairness over {} window(s) of {:.1f} s: max deviation "
        "{:.3f} ({} did {} of {} rows)",
        tag, result.rows_per_s(), result.windows, result.window_seconds, result.max_deviation,
        result.worst_namespace, result.worst_rows, result.window_rows);
    context.databases.drop(database);
    return result;
}

}  // namespace outboxd::bench
