#include "results_report.hpp"

#include <sstream>

#include "report_format.hpp"

namespace outboxd::bench {
namespace {

std::string rates_of(const std::vector<E2eResult>& runs) {
    std::string text;
    for (const auto& run : runs)
        text += (text.empty() ? "" : ", ") + strf("%.0f", run.rows_per_s());
    return text;
}

double wal_per_row(const E2eResult& run) {
    return run.rows > 0 ? static_cast<double>(run.wal_bytes) / static_cast<double>(run.rows) : 0;
}

}  // namespace

std::string render_heartbeats(const BenchReport& report) {
    if (!report.heartbeats) return {};
    const auto& h = *report.heartbeats;
    return strf(
        "\nHeartbeats (1 node, %lld tasks outstanding, each heartbeating once a second, %.0f s)\n"
        "  %.0f heartbeats/s taken, %.1f lease statements/s (heartbeat_statements_per_s, target "
        "<= 50), %.0f rows written/s; redelivered %lld\n",
        static_cast<long long>(h.tasks), h.seconds, h.heartbeats_per_s, h.statements_per_s,
        h.rows_written_per_s, static_cast<long long>(h.redelivered));
}

std::string render_results_table(const BenchReport& report) {
    const auto* kept = median_run(report.results_kept_runs);
    const auto* plain = median_run(report.results_plain_runs);
    if (!kept || !plain) return render_heartbeats(report);
    std::ostringstream out;
    out << "\nResults (1 node, e2e rows; workers answer results, and then not)\n";
    out << strf(
        "  %zu-byte results: %.0f rows/s (runs %s), WAL %.0f B/row; without: %.0f rows/s (runs "
        "%s), WAL %.0f B/row; result_cost %.3f (with / without)\n",
        kResultBytes, kept->rows_per_s(), rates_of(report.results_kept_runs).c_str(),
        wal_per_row(*kept), plain->rows_per_s(), rates_of(report.results_plain_runs).c_str(),
        wal_per_row(*plain),
        plain->rows_per_s() > 0 ? kept->rows_per_s() / plain->rows_per_s() : 0.0);
    return out.str() + render_heartbeats(report);
}

void add_results_json(nlohmann::json& out, const BenchReport& report) {
    out["heartbeat_statements_per_s"] = nullptr;
    if (const auto& h = report.heartbeats) {
        out["heartbeat_statements_per_s"] = json_fine(h->statements_per_s);
        out["heartbeats_per_s"] = json_rate(h->heartbeats_per_s);
        out["heartbeat_rows_written_per_s"] = json_rate(h->rows_written_per_s);
        out["heartbeat_tasks_redelivered"] = h->redelivered;
    }
    out["result_cost"] = nullptr;
    const auto* kept = median_run(report.results_kept_runs);
    const auto* plain = median_run(report.results_plain_runs);
    if (!kept || !plain || plain->rows_per_s() <= 0) return;
    out["result_cost"] = json_fine(kept->rows_per_s() / plain->rows_per_s());
    out["result_bytes"] = kResultBytes;
    out["results_rows_per_s"] = json_rate(kept->rows_per_s());
    out["results_plain_rows_per_s"] = json_rate(plain->rows_per_s());
    out["results_wal_bytes_per_row"] = json_rate(wal_per_row(*kept));
    out["results_plain_wal_bytes_per_row"] = json_rate(wal_per_row(*plain));
}

}  // namespace outboxd::bench
