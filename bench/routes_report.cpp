#include "routes_report.hpp"

#include <algorithm>
#include <optional>
#include <sstream>

#include "report_format.hpp"

namespace outboxd::bench {
namespace {

// Targets of the many-routes issue.
constexpr double kTargetIdleRoutesRatio = 0.9;
constexpr double kTargetTenantsRatio = 0.8;
constexpr double kTargetFairnessDeviation = 0.20;
constexpr double kTargetWeightedError = 0.15;
constexpr double kTargetQuietP99Ms = 50;

// The 1-node e2e median of the same benchmark run: what the report shows beside the ratios.
std::optional<double> one_route_rate(const BenchReport& report) {
    const auto* run = median_run(report.e2e_1node_runs);
    if (!run || run->rows_per_s() <= 0) return std::nullopt;
    return run->rows_per_s();
}

// The ratios are medians of same-repetition pairs, as each many-route run follows its own
// 1-route run within a minute: a shared machine drifts by more than the targets' margins
// within a full run (2026-12-02: the floor loop 24,782 -> 12,486 rows/s), and a ratio of
// two medians may divide runs made 10 minutes apart, measuring the drift.
// Idle routes: each run over the 1-node e2e run of its repetition, just before it.
std::vector<double> idle_ratios(const BenchReport& report) {
    return paired_ratios(report.idle_routes_runs, report.e2e_1node_runs);
}
// Tenants: each run over the 1-route drain of as many rows, just before it.
std::vector<double> tenant_ratios(const BenchReport& report) {
    return paired_ratios(report.tenants_runs, report.one_route_volume_runs);
}

std::string ratio_list(const std::vector<double>& values) {
    std::string text;
    for (const double value : values) text += (text.empty() ? "" : ", ") + strf("%.3f", value);
    return text;
}

double ms_per_round(const E2eResult& run) {
    return run.claim_rounds > 0 ? run.claim_seconds * 1e3 / static_cast<double>(run.claim_rounds)
                                : 0;
}
double rows_per_round(const E2eResult& run) {
    return run.claim_rounds > 0
               ? static_cast<double>(run.rows) / static_cast<double>(run.claim_rounds)
               : 0;
}

std::string drain_note(const E2eResult& run) {
    // What a row cost tells a many-route run's own cost apart from drift of the machine.
    std::string note = strf(
        "claim rounds %.1f ms, %.1f rows each; cpu s/10k node %.2f, pg %.2f, workers %.2f; "
        "WAL %.0f B/row",
        ms_per_round(run), rows_per_round(run), per_10k(run.node_cpu_s, run.rows),
        per_10k(run.pg_cpu_s, run.rows), per_10k(run.worker_cpu_s, run.rows),
        per_row(run.wal_bytes, run.rows));
    if (!run.complete) {
        note += strf("; CAPPED at %.0f s: %lld of %lld rows done", run.seconds,
                     static_cast<long long>(run.rows), static_cast<long long>(run.staged));
    }
    return note;
}

std::string rates(const std::vector<double>& values) {
    std::string text;
    for (const double value : values) text += (text.empty() ? "" : ", ") + strf("%.0f", value);
    return text;
}

std::vector<double> idle_rates(const BenchReport& report) {
    std::vector<double> out;
    for (const auto& run : report.idle_routes_runs) out.push_back(run.rows_per_s());
    return out;
}

std::vector<double> tenant_rates(const BenchReport& report) {
    std::vector<double> out;
    for (const auto& run : report.tenants_runs) out.push_back(run.rows_per_s());
    return out;
}

// Fairness is a bound, not a rate: the worst run counts.
const TenantsResult* least_fair(const BenchReport& report) {
    const TenantsResult* worst = nullptr;
    for (const auto& run : report.tenants_runs) {
        if (!worst || run.max_deviation > worst->max_deviation) worst = &run;
    }
    return worst;
}

}  // namespace

std::string render_routes_table(const BenchSettings& settings, const BenchReport& report) {
    if (report.idle_routes_runs.empty() && report.tenants_runs.empty() && !report.weighted &&
        !report.quiet_tenant) {
        return {};
    }
    std::ostringstream out;
    const auto one_route = one_route_rate(report);
    out << "\nMany routes and tenants (1 node)\n";
    if (one_route && (!report.idle_routes_runs.empty() || !report.tenants_runs.empty())) {
        out << strf(
            "  ratios to the 1-route rate, the e2e 1-node median of this run: %.0f rows/s "
            "(%s)\n",
            *one_route, drain_note(*median_run(report.e2e_1node_runs)).c_str());
    }
    if (const auto* run = median_run(report.idle_routes_runs)) {
        const auto ratios = idle_ratios(report);
        const double ratio = median(ratios).value_or(0);
        out << strf(
            "  1 busy route + %d idle routes: %.0f rows/s, ratio %.3f (target >= %.1f: %s)"
            "; runs %s, each over its repetition's e2e run %s; %s\n",
            settings.idle_routes, run->rows_per_s(), ratio, kTargetIdleRoutesRatio,
            verdict(ratio >= kTargetIdleRoutesRatio).c_str(), rates(idle_rates(report)).c_str(),
            ratio_list(ratios).c_str(), drain_note(*run).c_str());
    }
    if (const auto* run = median_run(report.tenants_runs)) {
        const auto ratios = tenant_ratios(report);
        const double ratio = median(ratios).value_or(0);
        if (const auto* route1 = median_run(report.one_route_volume_runs)) {
            out << strf("  1 route, %lld rows (the tenants' volume): %.0f rows/s (%s)\n",
                        static_cast<long long>(settings.tenant_rows), route1->rows_per_s(),
                        drain_note(*route1).c_str());
        }
        out << strf(
            "  %d namespaces x %d task queues, %lld rows: %.0f rows/s, ratio %.3f to 1 route "
            "of the same volume (target >= %.1f: %s), %.3f to the e2e run; runs %s, each over "
            "the 1-route run before it %s; %s\n",
            settings.tenant_namespaces, settings.tenant_queues,
            static_cast<long long>(settings.tenant_rows), run->rows_per_s(), ratio,
            kTargetTenantsRatio, verdict(ratio >= kTargetTenantsRatio).c_str(),
            one_route ? run->rows_per_s() / *one_route : 0.0, rates(tenant_rates(report)).c_str(),
            ratio_list(ratios).c_str(), drain_note(run->drain).c_str());
        const auto* worst = least_fair(report);
        out << strf(
            "  fairness: max share deviation %.3f (target <= %.2f: %s) over %d window(s) "
            "of %.1f s%s%s; worst: %s did %lld of %lld rows\n",
            worst->max_deviation, kTargetFairnessDeviation,
            verdict(worst->max_deviation <= kTargetFairnessDeviation).c_str(), worst->windows,
            worst->window_seconds, worst->partial ? " (backlog span shorter than one window)" : "",
            worst->together ? "" : " (NOT all namespaces backlogged together)",
            worst->worst_namespace.c_str(), static_cast<long long>(worst->worst_rows),
            static_cast<long long>(worst->window_rows));
    }
    if (report.weighted) {
        const auto& w = *report.weighted;
        if (!w.supported) {
            out << strf("  weights 1:2:4: no figure (%s)\n", w.note.c_str());
        } else {
            out << strf(
                "  weights 1:2:4, %lld rows each: shares %.3f / %.3f / %.3f over %.1f s (%lld "
                "rows%s), worst relative error %.3f (target <= %.2f: %s)\n",
                static_cast<long long>(settings.weighted_rows), w.shares.at(0), w.shares.at(1),
                w.shares.at(2), w.span_seconds, static_cast<long long>(w.rows),
                w.together ? "" : ", NOT all backlogged together", w.max_error,
                kTargetWeightedError, verdict(w.max_error <= kTargetWeightedError).c_str());
        }
    }
    if (report.quiet_tenant) {
        const auto& q = *report.quiet_tenant;
        out << strf(
            "  quiet tenant, 1 row/s beside a %lld-row backlog: p50 %.2f ms, p99 %.2f ms "
            "(target <= %.0f: %s), max %.2f ms; %lld of %lld rows%s, not received %lld; "
            "busy tenant %.0f rows/s\n",
            static_cast<long long>(settings.quiet_busy_rows), q.p50_ms, q.p99_ms, kTargetQuietP99Ms,
            verdict(q.p99_ms <= kTargetQuietP99Ms).c_str(), q.max_ms,
            static_cast<long long>(q.rows), static_cast<long long>(q.planned),
            q.backlog_lasted ? "" : " (the busy backlog ran out first)",
            static_cast<long long>(q.missing), q.busy_rows_per_s);
    }
    return out.str();
}

void add_routes_json(nlohmann::json& out, const BenchReport& report) {
    for (const char* key : {"idle_routes_ratio", "tenants_100_ratio", "fairness_max_dev",
                            "weighted_share_err", "quiet_tenant_p99_ms"}) {
        out[key] = nullptr;
    }
    const auto one_route = one_route_rate(report);
    if (const auto* route1 = median_run(report.e2e_1node_runs);
        route1 && (!report.idle_routes_runs.empty() || !report.tenants_runs.empty())) {
        out["one_route_rows_per_s"] = json_rate(route1->rows_per_s());
        out["one_route_ms_per_claim_round"] = json_fine(ms_per_round(*route1));
        out["one_route_rows_per_claim_round"] = json_fine(rows_per_round(*route1));
    }
    if (const auto* run = median_run(report.idle_routes_runs)) {
        const auto ratios = idle_ratios(report);
        if (const auto ratio = median(ratios)) out["idle_routes_ratio"] = json_fine(*ratio);
        for (const double ratio : ratios) out["idle_routes_ratio_runs"].push_back(json_fine(ratio));
        out["idle_routes_rows_per_s"] = json_rate(run->rows_per_s());
        for (const double rate : idle_rates(report))
            out["idle_routes_runs"].push_back(json_rate(rate));
        out["idle_routes_complete"] =
            std::all_of(report.idle_routes_runs.begin(), report.idle_routes_runs.end(),
                        [](const E2eResult& r) { return r.complete; });
        out["idle_routes_ms_per_claim_round"] = json_fine(ms_per_round(*run));
        out["idle_routes_rows_per_claim_round"] = json_fine(rows_per_round(*run));
    }
    if (const auto* run = median_run(report.tenants_runs)) {
        const auto ratios = tenant_ratios(report);
        if (const auto ratio = median(ratios)) out["tenants_100_ratio"] = json_fine(*ratio);
        for (const double ratio : ratios) out["tenants_100_ratio_runs"].push_back(json_fine(ratio));
        if (const auto* volume = median_run(report.one_route_volume_runs))
            out["one_route_volume_rows_per_s"] = json_rate(volume->rows_per_s());
        if (one_route) out["tenants_100_ratio_to_e2e"] = json_fine(run->rows_per_s() / *one_route);
        out["tenants_100_rows_per_s"] = json_rate(run->rows_per_s());
        for (const double rate : tenant_rates(report))
            out["tenants_runs"].push_back(json_rate(rate));
        out["tenants_complete"] =
            std::all_of(report.tenants_runs.begin(), report.tenants_runs.end(),
                        [](const TenantsResult& r) { return r.drain.complete; });
        out["tenants_ms_per_claim_round"] = json_fine(ms_per_round(run->drain));
        out["tenants_rows_per_claim_round"] = json_fine(rows_per_round(run->drain));
        const auto* worst = least_fair(report);
        out["fairness_max_dev"] = json_fine(worst->max_deviation);
        for (const auto& r : report.tenants_runs)
            out["fairness_runs"].push_back(json_fine(r.max_deviation));
        out["fairness_window_s"] = json_fine(worst->window_seconds);
        out["fairness_windows"] = worst->windows;
        out["fairness_partial"] = worst->partial;
        out["fairness_together"] = worst->together;
    }
    if (report.weighted) {
        const auto& w = *report.weighted;
        if (w.supported) {
            out["weighted_share_err"] = json_fine(w.max_error);
            for (const double share : w.shares) out["weighted_shares"].push_back(json_fine(share));
            out["weighted_span_s"] = json_fine(w.span_seconds);
            out["weighted_rows"] = w.rows;
            out["weighted_together"] = w.together;
        } else {
            out["weighted_note"] = w.note;
        }
    }
    if (report.quiet_tenant) {
        const auto& q = *report.quiet_tenant;
        out["quiet_tenant_p50_ms"] = json_fine(q.p50_ms);
        out["quiet_tenant_p99_ms"] = json_fine(q.p99_ms);
        out["quiet_tenant_max_ms"] = json_fine(q.max_ms);
        out["quiet_tenant_rows"] = q.rows;
        out["quiet_tenant_rows_planned"] = q.planned;
        out["quiet_tenant_missing"] = q.missing;
        out["quiet_tenant_backlog_lasted"] = q.backlog_lasted;
        out["quiet_tenant_busy_rows_per_s"] = json_rate(q.busy_rows_per_s);
    }
}

}  // namespace outboxd::bench
