#include "chaos_report.hpp"

#include <cmath>
#include <cstdio>
#include <fstream>

#include <nlohmann/json.hpp>

namespace outboxd::chaos {

namespace {

std::string fixed(double value, int decimals) {
    char text[64];
    std::snprintf(text, sizeof text, "%.*f", decimals, value);
    return text;
}

std::string padded(const std::string& text, std::size_t width) {
    return text.size() >= width ? text + " " : text + std::string(width - text.size(), ' ');
}

nlohmann::json summary(const ChaosResult& result) {
    const double recovery_max = std::round(result.recovery_s_max * 10) / 10;
    const double catch_up_max = std::round(result.catch_up_s_max * 10) / 10;
    auto by_kind = nlohmann::json::object();
    for (const auto& kind : result.duplicates_by_kind) {
        by_kind[std::string{name_of(kind.kind)}] = kind.redeliveries;
    }
    return {
        {"mode", result.mode},
        {"rows", result.rows},
        {"acknowledged", result.acknowledged},
        {"lost", result.lost},
        {"missing", result.missing},
        {"unfinished", result.unfinished},
        {"stale_outcomes_applied", result.stale_outcomes_applied},
        {"duplicates", result.duplicates},
        {"duplicates_by_kind", by_kind},
        {"unexplained_redeliveries", result.unexplained_redeliveries},
        {"overlapping_claims", result.overlapping_claims},
        {"faults", result.faults.size()},
        {"unexpected_exits", result.node_exits.size()},
        {"worker_unexpected_exits", result.worker_unexpected_exits},
        {"unresponsive_nodes", result.unresponsive_nodes},
        {"recovery_s_max", recovery_max},
        {"catch_up_s_max", catch_up_max},
        {"not_recovered", result.not_recovered},
        {"duration_s", std::round(result.duration_s)},
        {"pass", result.pass()},
    };
}

}  // namespace

void print_report(std::ostream& out, const ChaosResult& result, std::int64_t run_start_ms,
                  const std::string& json_path) {
    out << "\n"
        << padded("fault", 18) << padded("target", 13) << padded("at_s", 8) << padded("len_s", 7)
        << padded("pre/s", 8) << padded("min/s", 8) << padded("backlog", 9) << padded("recov_s", 9)
        << padded("catchup_s", 11) << padded("redeliv", 9) << padded("exits", 7) << "note\n";
    for (const auto& fault : result.faults) {
        const auto& r = fault.record;
        out << padded(std::string{name_of(r.kind)}, 18) << padded(r.target, 13)
            << padded(fixed(static_cast<double>(r.start_ms - run_start_ms) / 1000.0, 1), 8)
            << padded(fixed(static_cast<double>(r.end_ms - r.start_ms) / 1000.0, 1), 7)
            << padded(fixed(fault.pre_rate, 0), 8) << padded(fixed(fault.min_rate, 0), 8)
            << padded(std::to_string(fault.peak_backlog), 9)
            << padded(fault.recovery_s ? fixed(*fault.recovery_s, 1) : "NEVER", 9)
            << padded(fault.catch_up_s ? fixed(*fault.catch_up_s, 1) : "NEVER", 11)
            << padded(std::to_string(fault.redeliveries), 9)
            << padded(std::to_string(fault.node_exits), 7) << r.note << "\n";
    }
    out << "\n" << padded("fault kind", 19) << padded("faults", 8) << "redeliveries\n";
    for (const auto& kind : result.duplicates_by_kind) {
        out << padded(std::string{name_of(kind.kind)}, 19) << padded(std::to_string(kind.faults), 8)
            << kind.redeliveries << "\n";
    }
    out << padded("(unexplained)", 27) << result.unexplained_redeliveries << "\n";
    out << "\nrows " << result.rows << " (acknowledged " << result.acknowledged << "): done "
        << result.done << ", failed " << result.failed << ", cancelled " << result.cancelled
        << ", lost " << result.lost << " (missing " << result.missing << ", not terminal "
        << result.unfinished << ")\n"
        << "deliveries " << result.deliveries << ", redeliveries " << result.duplicates
        << " (unexplained " << result.unexplained_redeliveries << "), stale outcomes applied "
        << result.stale_outcomes_applied << ", overlapping claims " << result.overlapping_claims
        << ", rows done twice " << result.rows_done_twice << "\n"
        << "unexpected node exits " << result.node_exits.size() << ", worker exits "
        << result.worker_unexpected_exits << ", recovery max " << fixed(result.recovery_s_max, 1)
        << " s after a fault's end (" << fixed(result.catch_up_s_max, 1) << " s from its start)\n";
    if (result.malformed_log_lines > 0) {
        out << "delivery log lines that did not parse: " << result.malformed_log_lines << "\n";
    }
    for (const auto& exit : result.node_exits) {
        out << "node exit: " << exit.node_id << " code " << exit.code << " at +"
            << fixed(static_cast<double>(exit.at_ms - run_start_ms) / 1000.0, 1) << " s\n";
    }
    for (const auto& example : result.examples) out << "  " << example << "\n";
    for (const auto& failure : result.failures) out << "FAIL: " << failure << "\n";
    out << (result.pass() ? "PASS" : "FAIL") << "\n";

    const auto line = summary(result).dump();
    if (!json_path.empty()) std::ofstream{json_path} << line << "\n";
    out << line << std::endl;
}

}  // namespace outboxd::chaos
