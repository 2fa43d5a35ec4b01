#include "tenants_scenario.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include <spdlog/spdlog.h>

#include "namespace_shares.hpp"
#include "report_format.hpp"
#include "route_report.hpp"
#include "scenario_registry.hpp"

namespace outboxd::bench {
namespace {

// Targets of the many-routes issue.
constexpr double kTargetTenantsRatio = 0.8;
constexpr double kTargetFairnessDeviation = 0.20;

std::vector<std::string> names(const std::string& prefix, int count) {
    std::vector<std::string> out;
    for (int i = 0; i < count; ++i) out.push_back(prefix + std::to_string(i));
    return out;
}

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

// Fairness is a bound, not a rate: the worst run counts.
const TenantsResult* least_fair(const std::vector<TenantsResult>& runs) {
    const TenantsResult* worst = nullptr;
    for (const auto& run : runs) {
        if (!worst || run.max_deviation > worst->max_deviation) worst = &run;
    }
    return worst;
}

}  // namespace

void TenantsScenario::repeat(const Turn& turn) {
    const auto tag = "e2e_1n_volume" + turn.suffix();
    volume_runs_.push_back(run_e2e(turn.context, 1, tag, turn.settings().tenant_rows));
    spdlog::info("{}: {:.0f} rows/s", tag, volume_runs_.back().rows_per_s());
    runs_.push_back(run_tenants(turn.context, "tenants" + turn.suffix()));
}

void TenantsScenario::render_table(const BenchSettings& settings, const ScenarioRegistry& registry,
                                   ReportTable& table) const {
    const auto* run = median_run(runs_);
    if (!run) return;
    const auto& e2e = registry.get<E2eScenario>();
    put_one_route(e2e, table);
    const auto one_route = one_route_rate(e2e);
    const auto ratios = paired_ratios(runs_, volume_runs_);
    const double ratio = median(ratios).value_or(0);
    std::string out;
    if (const auto* route1 = median_run(volume_runs_)) {
        out += strf("  1 route, %lld rows (the tenants' volume): %.0f rows/s (%s)\n",
                    static_cast<long long>(settings.tenant_rows), route1->rows_per_s(),
                    drain_note(*route1).c_str());
    }
    out += strf(
        "  %d namespaces x %d task queues, %lld rows: %.0f rows/s, ratio %.3f to 1 route "
        "of the same volume (target >= %.1f: %s), %.3f to the e2e run; runs %s, each over "
        "the 1-route run before it %s; %s\n",
        settings.tenant_namespaces, settings.tenant_queues,
        static_cast<long long>(settings.tenant_rows), run->rows_per_s(), ratio, kTargetTenantsRatio,
        verdict(ratio >= kTargetTenantsRatio).c_str(),
        one_route ? run->rows_per_s() / *one_route : 0.0, rates_of(runs_).c_str(),
        ratio_list(ratios).c_str(), drain_note(run->drain).c_str());
    const auto* worst = least_fair(runs_);
    out += strf(
        "  fairness: max share deviation %.3f (target <= %.2f: %s) over %d window(s) "
        "of %.1f s%s%s; worst: %s did %lld of %lld rows\n",
        worst->max_deviation, kTargetFairnessDeviation,
        verdict(worst->max_deviation <= kTargetFairnessDeviation).c_str(), worst->windows,
        worst->window_seconds, worst->partial ? " (backlog span shorter than one window)" : "",
        worst->together ? "" : " (NOT all namespaces backlogged together)",
        worst->worst_namespace.c_str(), static_cast<long long>(worst->worst_rows),
        static_cast<long long>(worst->window_rows));
    table.put(std::string{kName}, out);
}

void TenantsScenario::add_json(const ScenarioRegistry& registry, nlohmann::json& out) const {
    out["tenants_100_ratio"] = nullptr;
    out["fairness_max_dev"] = nullptr;
    const auto* run = median_run(runs_);
    if (!run) return;
    const auto& e2e = registry.get<E2eScenario>();
    add_one_route_json(e2e, out);
    const auto ratios = paired_ratios(runs_, volume_runs_);
    if (const auto ratio = median(ratios)) out["tenants_100_ratio"] = json_fine(*ratio);
    for (const double ratio : ratios) out["tenants_100_ratio_runs"].push_back(json_fine(ratio));
    if (const auto* volume = median_run(volume_runs_))
        out["one_route_volume_rows_per_s"] = json_rate(volume->rows_per_s());
    if (const auto one_route = one_route_rate(e2e))
        out["tenants_100_ratio_to_e2e"] = json_fine(run->rows_per_s() / *one_route);
    out["tenants_100_rows_per_s"] = json_rate(run->rows_per_s());
    for (const auto& each : runs_) out["tenants_runs"].push_back(json_rate(each.rows_per_s()));
    out["tenants_complete"] = std::all_of(runs_.begin(), runs_.end(),
                                          [](const TenantsResult& r) { return r.drain.complete; });
    out["tenants_ms_per_claim_round"] = json_fine(ms_per_round(run->drain));
    out["tenants_rows_per_claim_round"] = json_fine(rows_per_round(run->drain));
    const auto* worst = least_fair(runs_);
    out["fairness_max_dev"] = json_fine(worst->max_deviation);
    for (const auto& each : runs_) out["fairness_runs"].push_back(json_fine(each.max_deviation));
    out["fairness_window_s"] = json_fine(worst->window_seconds);
    out["fairness_windows"] = worst->windows;
    out["fairness_partial"] = worst->partial;
    out["fairness_together"] = worst->together;
}

double TenantsScenario::max_foreign_cpu() const {
    double most = 0;
    for (const auto& run : runs_) most = std::max(most, run.drain.foreign_cpu);
    for (const auto& run : volume_runs_) most = std::max(most, run.foreign_cpu);
    return most;
}

}  // namespace outboxd::bench
