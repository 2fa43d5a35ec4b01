#include "controls_scenario.hpp"

#include <sstream>
#include <string>

#include "report_format.hpp"

namespace outboxd::bench {
namespace {

// Targets of the delivery controls issue.
constexpr double kTargetOrderedRatio = 0.6;
constexpr double kTargetSerialRowsPerS = 300;
constexpr double kTargetRateErr = 0.10;
constexpr double kTargetWindowRatio = 1.05;  // the bound, within 5%
constexpr double kTargetPriorityP99Ms = 50;

}  // namespace

void ControlsScenario::once(const Turn& turn) { result_ = run_controls(turn.context); }

void ControlsScenario::render_table(const BenchSettings& /*settings*/,
                                    const ScenarioRegistry& /*registry*/,
                                    ReportTable& table) const {
    if (!result_) return;
    const auto& c = *result_;
    std::ostringstream out;
    out << "\nDelivery controls\n";
    out << strf(
        "  ordered delivery, %lld rows (10 a workflow), 1 node: %.0f rows/s against %.0f "
        "unordered: ratio %.3f (target >= %.1f: %s)%s\n",
        static_cast<long long>(c.ordered.rows), c.ordered.ordered_rows_per_s,
        c.ordered.unordered_rows_per_s, c.ordered.ratio, kTargetOrderedRatio,
        verdict(c.ordered.ratio >= kTargetOrderedRatio).c_str(),
        c.ordered.complete ? "" : " (a run stopped before it drained)");
    out << strf("  one workflow of %lld rows, ordered: %.0f rows/s (target >= %.0f: %s)\n",
                static_cast<long long>(c.ordered.serial_rows), c.ordered.serial_rows_per_s,
                kTargetSerialRowsPerS,
                verdict(c.ordered.serial_rows_per_s >= kTargetSerialRowsPerS).c_str());
    out << strf(
        "  rate limit %.0f/s burst %d, %d nodes, %.0f s: %.1f/s, worst relative error %.3f "
        "(target <= %.2f: %s); busiest 1 s window %.3f of rate + burst (target <= %.2f: %s)\n",
        c.rate.per_second, c.rate.burst, c.rate.nodes, c.rate.seconds, c.rate.achieved, c.rate.err,
        kTargetRateErr, verdict(c.rate.err <= kTargetRateErr).c_str(), c.rate.window_max_ratio,
        kTargetWindowRatio, verdict(c.rate.window_max_ratio <= kTargetWindowRatio).c_str());
    out << strf(
        "  priority rows behind %lld of priority 0 (%lld still to do): COMMIT -> worker p50 "
        "%.2f ms, p99 %.2f ms (target <= %.0f: %s), max %.2f; %lld rows, not received %lld\n",
        static_cast<long long>(c.priority.backlog), static_cast<long long>(c.priority.backlog_left),
        c.priority.p50_ms, c.priority.p99_ms, kTargetPriorityP99Ms,
        verdict(c.priority.p99_ms <= kTargetPriorityP99Ms && c.priority.missing == 0).c_str(),
        c.priority.max_ms, static_cast<long long>(c.priority.rows),
        static_cast<long long>(c.priority.missing));
    out << strf(
        "  concurrency limit %d over %d nodes: highest claimed count seen %lld (%lld samples; "
        "must not exceed: %s), %.0f rows/s\n",
        c.concurrency.limit, c.concurrency.nodes, static_cast<long long>(c.concurrency.max_seen),
        static_cast<long long>(c.concurrency.samples),
        verdict(c.concurrency.max_seen <= c.concurrency.limit).c_str(), c.concurrency.rows_per_s);
    table.put(std::string{kName}, out.str());
}

void ControlsScenario::add_json(const ScenarioRegistry& /*registry*/, nlohmann::json& out) const {
    for (const char* key : {"ordered_ratio", "ordered_serial_rows_per_s", "rate_limit_err",
                            "priority_p99_ms", "concurrency_limit_max_seen"}) {
        out[key] = nullptr;
    }
    if (!result_) return;
    const auto& c = *result_;
    out["ordered_ratio"] = json_fine(c.ordered.ratio);
    out["ordered_rows_per_s"] = json_rate(c.ordered.ordered_rows_per_s);
    out["unordered_rows_per_s"] = json_rate(c.ordered.unordered_rows_per_s);
    out["ordered_complete"] = c.ordered.complete;
    out["ordered_serial_rows_per_s"] = json_rate(c.ordered.serial_rows_per_s);
    out["rate_limit_err"] = json_fine(c.rate.err);
    out["rate_limit_achieved_per_s"] = json_fine(c.rate.achieved);
    out["rate_limit_window_max_ratio"] = json_fine(c.rate.window_max_ratio);
    out["priority_p50_ms"] = json_fine(c.priority.p50_ms);
    out["priority_p99_ms"] = json_fine(c.priority.p99_ms);
    out["priority_max_ms"] = json_fine(c.priority.max_ms);
    out["priority_missing"] = c.priority.missing;
    out["priority_backlog_left"] = c.priority.backlog_left;
    out["concurrency_limit"] = c.concurrency.limit;
    out["concurrency_limit_max_seen"] = c.concurrency.max_seen;
    out["concurrency_limit_rows_per_s"] = json_rate(c.concurrency.rows_per_s);
}

}  // namespace outboxd::bench
