#include "http_push_report.hpp"

#include <sstream>

#include "report_format.hpp"

namespace outboxd::bench {
namespace {

// Targets of the HTTP push issue.
constexpr double kTargetRatioToWebSocket = 0.4;
constexpr double kTargetP50Ms = 5;
constexpr double kTargetP99Ms = 20;

std::string rates_of(const std::vector<E2eResult>& runs) {
    std::string text;
    for (const auto& run : runs)
        text += (text.empty() ? "" : ", ") + strf("%.0f", run.rows_per_s());
    return text;
}

}  // namespace

std::string render_http_push_table(const BenchSettings& settings, const BenchReport& report) {
    const auto* push = median_run(report.http_push_runs);
    if (!push && !report.http_latency) return {};
    std::ostringstream out;
    out << "\nHTTP push (1 node -> an HTTP target, max_in_flight " << settings.http_max_in_flight
        << ")\n";
    if (push) {
        const auto* ws = median_run(report.http_ws_runs);
        const double ratio = ws && ws->rows_per_s() > 0 ? push->rows_per_s() / ws->rows_per_s() : 0;
        out << strf(
            "  %lld rows to an outboxd-receiver process: %.0f rows/s (runs %s); node cpu %.2f, "
            "receiver cpu %.2f s/10k\n",
            static_cast<long long>(settings.http_rows), push->rows_per_s(),
            rates_of(report.http_push_runs).c_str(),
            push->node_cpu_s * 1e4 / std::max<double>(1.0, static_cast<double>(push->rows)),
            push->worker_cpu_s * 1e4 / std::max<double>(1.0, static_cast<double>(push->rows)));
        if (ws) {
            out << strf(
                "  the same rows over WebSocket: %.0f rows/s (runs %s); ratio %.3f (target >= "
                "%.1f: %s)\n",
                ws->rows_per_s(), rates_of(report.http_ws_runs).c_str(), ratio,
                kTargetRatioToWebSocket, verdict(ratio >= kTargetRatioToWebSocket).c_str());
        }
    }
    if (report.http_latency) {
        const auto& l = *report.http_latency;
        out << strf(
            "  latency at %.0f rows/s (COMMIT returned -> request received by an endpoint in the "
            "driver): p50 %.2f ms (target <= %.0f: %s), p90 %.2f, p99 %.2f ms (target <= %.0f: "
            "%s), max %.2f; %lld of %lld rows, not received %lld\n",
            l.achieved_rate, l.p50_ms, kTargetP50Ms, verdict(l.p50_ms <= kTargetP50Ms).c_str(),
            l.p90_ms, l.p99_ms, kTargetP99Ms, verdict(l.p99_ms <= kTargetP99Ms).c_str(), l.max_ms,
            static_cast<long long>(l.rows), static_cast<long long>(l.planned),
            static_cast<long long>(l.missing));
    }
    return out.str();
}

void add_http_push_json(nlohmann::json& out, const BenchReport& report) {
    for (const char* key : {"http_push_rows_per_s", "http_push_ratio_to_ws",
                            "http_push_latency_p50_ms", "http_push_latency_p99_ms"}) {
        out[key] = nullptr;
    }
    if (const auto* push = median_run(report.http_push_runs)) {
        out["http_push_rows_per_s"] = json_rate(push->rows_per_s());
        for (const auto& run : report.http_push_runs) {
            out["http_push_runs"].push_back(json_rate(run.rows_per_s()));
        }
        out["http_push_complete"] =
            std::all_of(report.http_push_runs.begin(), report.http_push_runs.end(),
                        [](const E2eResult& r) { return r.complete; });
        if (const auto* ws = median_run(report.http_ws_runs); ws && ws->rows_per_s() > 0) {
            out["http_push_ws_rows_per_s"] = json_rate(ws->rows_per_s());
            out["http_push_ratio_to_ws"] = json_fine(push->rows_per_s() / ws->rows_per_s());
        }
    }
    if (report.http_latency) {
        const auto& l = *report.http_latency;
        out["http_push_latency_p50_ms"] = json_fine(l.p50_ms);
        out["http_push_latency_p90_ms"] = json_fine(l.p90_ms);
        out["http_push_latency_p99_ms"] = json_fine(l.p99_ms);
        out["http_push_latency_max_ms"] = json_fine(l.max_ms);
        out["http_push_latency_missing"] = l.missing;
        out["http_push_latency_rate_achieved"] = json_rate(l.achieved_rate);
    }
}

}  // namespace outboxd::bench
