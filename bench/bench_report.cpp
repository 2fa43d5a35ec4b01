#include "bench_report.hpp"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "clients_report.hpp"
#include "controls_report.hpp"
#include "http_push_report.hpp"
#include "report_format.hpp"
#include "results_report.hpp"
#include "routes_report.hpp"

namespace outboxd::bench {
namespace {

const char* mode_name(const BenchSettings& settings) {
    if (settings.smoke) return "smoke";
    return settings.quick ? "quick" : "full";
}

// Targets of issue 7.
constexpr double kTargetRatioToFloor = 1.2;
constexpr double kTargetP50Ms = 2;
constexpr double kTargetP99Ms = 10;
constexpr double kTargetWakeCost = 0.10;
constexpr double kTargetHistoryRatio = 0.8;

const std::pair<ClaimLoopConfig, ClaimLoopResult>* best_cell(const BenchReport& report) {
    const std::pair<ClaimLoopConfig, ClaimLoopResult>* best = nullptr;
    for (const auto& cell : report.grid) {
        if (!best || cell.second.rows_per_s() > best->second.rows_per_s()) best = &cell;
    }
    return best;
}

std::optional<double> best_e2e(const BenchReport& report) {
    std::optional<double> best;
    for (const auto* run : {median_run(report.e2e_1node_runs), median_run(report.e2e_3node_runs)}) {
        if (run && (!best || run->rows_per_s() > *best)) best = run->rows_per_s();
    }
    return best;
}

// Above this share of the machine used by other processes, a run is flagged as noisy.
constexpr double kNoisyForeignShare = 0.10;

double max_foreign_cpu(const BenchReport& report) {
    double most = 0;
    for (const auto& run : report.floor_runs) most = std::max(most, run.foreign_cpu);
    for (const auto& [config, run] : report.grid) most = std::max(most, run.foreign_cpu);
    for (const auto& run : report.e2e_1node_runs) most = std::max(most, run.foreign_cpu);
    for (const auto& run : report.e2e_3node_runs) most = std::max(most, run.foreign_cpu);
    for (const auto& run : report.idle_routes_runs) most = std::max(most, run.foreign_cpu);
    for (const auto& run : report.tenants_runs) most = std::max(most, run.drain.foreign_cpu);
    for (const auto& run : report.one_route_volume_runs) most = std::max(most, run.foreign_cpu);
    for (const auto* runs : {&report.http_push_runs, &report.http_ws_runs}) {
        for (const auto& run : *runs) most = std::max(most, run.foreign_cpu);
    }
    if (report.history) {
        const auto& h = *report.history;
        for (const auto* run : {&h.clean, &h.history, &h.old_snapshot}) {
            most = std::max(most, run->foreign_cpu);
        }
        for (const auto* run : {&h.floor_clean, &h.floor_history, &h.floor_old_snapshot}) {
            most = std::max(most, run->foreign_cpu);
        }
    }
    return most;
}

std::string history_label(std::int64_t rows) {
    if (rows % 1'000'000 == 0) return std::to_string(rows / 1'000'000) + "M";
    if (rows % 1'000 == 0) return std::to_string(rows / 1'000) + "k";
    return std::to_string(rows);
}

// Rows/s of each run; a run that other processes disturbed says by how much.
std::string runs_list(const auto& runs) {
    std::string text;
    for (const auto& run : runs) {
        if (!text.empty()) text += ", ";
        text += strf("%.0f", run.rows_per_s());
        if (run.foreign_cpu > kNoisyForeignShare)
            text += strf(" (other %.0f%%)", run.foreign_cpu * 100);
    }
    return text;
}

}  // namespace

double load_average() {
    std::ifstream file{"/proc/loadavg"};
    double one_minute = 0;
    file >> one_minute;
    return one_minute;
}

MachineInfo read_machine_info(const BenchDatabases& databases) {
    MachineInfo info;
    info.cpus = static_cast<int>(::sysconf(_SC_NPROCESSORS_ONLN));
    std::ifstream cpuinfo{"/proc/cpuinfo"};
    for (std::string line; std::getline(cpuinfo, line);) {
        if (line.rfind("model name", 0) == 0) {
            info.cpu_model = line.substr(line.find(':') + 2);
            break;
        }
    }
    std::ifstream meminfo{"/proc/meminfo"};
    std::string label;
    double kib = 0;
    if (meminfo >> label >> kib) info.memory_gib = kib / (1024.0 * 1024.0);
    info.postgres_version = databases.server_version();
    info.postgres_settings = databases.durability();
    info.load_before = load_average();
    return info;
}

std::string render_table(const BenchSettings& settings, const BenchReport& report) {
    std::ostringstream out;
    const auto& m = report.machine;
    out << "\n== outboxd benchmark (" << mode_name(settings) << ") ==\n";
    out << strf("machine: %d CPU (%s), %.1f GiB RAM; PostgreSQL %s (%s)\n", m.cpus,
                m.cpu_model.c_str(), m.memory_gib, m.postgres_version.c_str(),
                m.postgres_settings.c_str());
    const double foreign = max_foreign_cpu(report);
    out << strf(
        "load average (1 min) %.2f at start, %.2f at end; other processes used up to %.0f%% "
        "of the machine during a throughput run%s\n",
        m.load_before, report.load_after, foreign * 100,
        foreign > kNoisyForeignShare ? " -- NOISY: the machine was shared" : "");
    out << strf(
        "N = %lld rows per throughput run, median of %d run(s); node batch %d; "
        "%d outboxd-worker process(es), max in flight %d each\n\n",
        static_cast<long long>(settings.rows), settings.repeat, settings.node_batch_size,
        settings.worker_processes, settings.worker_max_in_flight);

    out << "Throughput                                   rows/s  node cpu  pg cpu  worker  host  "
           "other  WAL    "
           "runs (rows/s)\n";
    out << "                                                      s/10k     s/10k   s/10k   busy  "
           "cpu    B/row\n";
    const auto floor = median_run(report.floor_runs);
    if (floor) {
        out << strf("  %-42s %7.0f  %8s  %6.2f  %6s  %4s  %4.0f%%  %5.0f  %s\n",
                    "sql floor: claim 100 + complete, 1 client", floor->rows_per_s(), "-",
                    per_10k(floor->pg_cpu_s, floor->rows), "-", "-", floor->foreign_cpu * 100,
                    per_row(floor->wal_bytes, floor->rows), runs_list(report.floor_runs).c_str());
    }
    const auto best = best_cell(report);
    if (best) {
        out << strf(
            "  %-42s %7.0f  %8s  %6.2f  %6s  %4s  %4.0f%%  %5.0f  %s\n", "sql limit: best of grid",
            best->second.rows_per_s(), "-", per_10k(best->second.pg_cpu_s, best->second.rows), "-",
            "-", best->second.foreign_cpu * 100, per_row(best->second.wal_bytes, best->second.rows),
            describe(best->first).c_str());
    }
    for (const auto* runs : {&report.e2e_1node_runs, &report.e2e_3node_runs}) {
        const auto run = median_run(*runs);
        if (!run) continue;
        const auto label = strf("e2e: %d node%s -> workers over WebSocket", run->nodes,
                                run->nodes == 1 ? "" : "s");
        out << strf("  %-42s %7.0f  %8.2f  %6.2f  %6.2f  %3.0f%%  %4.0f%%  %5.0f  %s%s\n",
                    label.c_str(), run->rows_per_s(), per_10k(run->node_cpu_s, run->rows),
                    per_10k(run->pg_cpu_s, run->rows), per_10k(run->worker_cpu_s, run->rows),
                    run->host_busy * 100, run->foreign_cpu * 100,
                    per_row(run->wal_bytes, run->rows), runs_list(*runs).c_str(),
                    run->complete ? ""
                                  : strf("  CAPPED at %.0f s: %lld of %lld rows done", run->seconds,
                                         static_cast<long long>(run->rows),
                                         static_cast<long long>(run->staged))
                                        .c_str());
    }
    if (const auto e2e = best_e2e(report)) {
        if (floor) {
            const double ratio = *e2e / floor->rows_per_s();
            out << strf("  %-42s %8.2f   target >= %.1f: %s\n", "ratio to floor (best e2e / floor)",
                        ratio, kTargetRatioToFloor, verdict(ratio >= kTargetRatioToFloor).c_str());
        }
        if (best) {
            out << strf("  %-42s %8.2f\n", "ratio to limit (best e2e / sql limit)",
                        *e2e / best->second.rows_per_s());
        }
    }

    if (report.latency) {
        const auto& l = *report.latency;
        out << strf(
            "\nLatency at %.0f rows/s (COMMIT returned -> task received by an in-process "
            "SDK worker; 1 node)\n",
            settings.latency_rate);
        out << strf(
            "  %lld of %lld rows staged after a %.0f s warm-up, achieved %.0f rows/s%s, "
            "not received %lld, node cpu %.0f%% of a core\n",
            static_cast<long long>(l.rows), static_cast<long long>(l.planned),
            settings.latency_warmup_seconds, l.achieved_rate,
            l.achieved_rate < 0.95 * settings.latency_rate ? " (BELOW the target rate)" : "",
            static_cast<long long>(l.missing), l.node_cpu_share * 100);
        out << strf(
            "  p50 %.2f ms (target <= %.0f: %s)   p90 %.2f ms   p99 %.2f ms (target <= %.0f: "
            "%s)   max %.2f ms\n",
            l.p50_ms, kTargetP50Ms, verdict(l.p50_ms <= kTargetP50Ms).c_str(), l.p90_ms, l.p99_ms,
            kTargetP99Ms, verdict(l.p99_ms <= kTargetP99Ms).c_str(), l.max_ms);
    }

    if (report.wake) {
        const auto& w = *report.wake;
        out << strf(
            "\nApplication insert cost of the wake trigger (%d writers, single-row "
            "transactions, %d rounds of off + on, %.1f s each, ABBA)\n",
            settings.wake_writers, settings.wake_rounds, settings.wake_seconds);
        std::string ratios;
        for (const double ratio : w.round_ratios) ratios += strf(" %.2f", ratio);
        out << strf(
            "  trigger off %.0f rows/s   trigger on %.0f rows/s (means)   on/off per "
            "round:%s\n",
            w.rows_per_s_off, w.rows_per_s_on, ratios.c_str());
        out << strf("  cost %.3f = 1 - median round ratio (target <= %.2f: %s)\n", w.cost(),
                    kTargetWakeCost, verdict(w.cost() <= kTargetWakeCost).c_str());
    }

    if (report.history) {
        const auto& h = *report.history;
        out << strf(
            "\nClaim cost vs history (outboxd: 1 node, end to end, the target: %lld staged "
            "rows per run, stopped at %.0f s, %d run(s) per condition taking turns, "
            "pooled; SQL floor loop: claim 100 + complete from the front, 1 client, %lld "
            "rows)\n",
            static_cast<long long>(h.old_snapshot.staged), settings.snapshot_max_seconds - 1,
            settings.history_repeat, static_cast<long long>(settings.rows));
        out << strf("  %-40s %10s %7s %12s %7s\n", "", "outboxd", "ratio", "floor loop", "ratio");
        const double clean = h.clean.rows_per_s();
        const double floor_clean = h.floor_clean.rows_per_s();
        const auto line = [&](const std::string& name, const E2eResult& e2e,
                              const ClaimLoopResult& floor, bool judged) {
            const double ratio = clean > 0 ? e2e.rows_per_s() / clean : 0;
            std::string stopped;
            if (!e2e.complete) stopped += "  (outboxd stopped at the limit)";
            if (floor.capped) stopped += strf("  (floor loop stopped at %.0f s)", floor.seconds);
            out << strf("  %-40s %10.0f %7s %12.0f %7s%s%s\n", name.c_str(), e2e.rows_per_s(),
                        judged ? strf("%.2f", ratio).c_str() : "", floor.rows_per_s(),
                        judged && floor_clean > 0
                            ? strf("%.2f", floor.rows_per_s() / floor_clean).c_str()
                            : "",
                        judged ? strf("  (target >= %.1f: %s)", kTargetHistoryRatio,
                                      verdict(ratio >= kTargetHistoryRatio).c_str())
                                     .c_str()
                               : "",
                        stopped.c_str());
        };
        line("clean table", h.clean, h.floor_clean, false);
        const auto history_name = "+ " + history_label(h.history_rows) + " finished rows";
        line(history_name, h.history, h.floor_history, true);
        line(history_name + " + old snapshot", h.old_snapshot, h.floor_old_snapshot, true);
        for (const auto& [tag, runs] : h.runs) {
            std::string rates;
            for (const double r : runs) rates += strf(" %.0f", r);
            out << strf("  outboxd runs, %s:%s rows/s\n", tag.c_str(), rates.c_str());
        }
        out << strf("  (history generated in %.0f s)\n", h.history_generate_seconds);
    }

    out << render_routes_table(settings, report);
    out << render_http_push_table(settings, report);
    out << render_controls_table(report);
    out << render_results_table(report);
    out << render_clients_table(report);

    if (!report.grid.empty()) {
        out << strf(
            "\nSQL limit grid (%lld rows per cell)            rows/s   pg cpu s/10k  WAL "
            "B/row\n",
            static_cast<long long>(settings.grid_rows));
        for (const auto& [config, result] : report.grid) {
            out << strf("  %-42s %8.0f   %6.2f        %6.0f\n", describe(config).c_str(),
                        result.rows_per_s(), per_10k(result.pg_cpu_s, result.rows),
                        per_row(result.wal_bytes, result.rows));
        }
    }
    out << strf("\nTotal benchmark time %.0f s\n", report.total_seconds);
    return out.str();
}

nlohmann::json render_json(const BenchSettings& settings, const BenchReport& report) {
    using nlohmann::json;
    json out;
    out["mode"] = mode_name(settings);
    out["rows"] = settings.rows;
    out["repeat"] = settings.repeat;
    out["node_batch_size"] = settings.node_batch_size;
    out["worker_processes"] = settings.worker_processes;
    out["machine"] = {{"cpus", report.machine.cpus},
                      {"cpu_model", report.machine.cpu_model},
                      {"memory_gib", report.machine.memory_gib},
                      {"postgres", report.machine.postgres_version},
                      {"postgres_settings", report.machine.postgres_settings},
                      {"load_before", report.machine.load_before},
                      {"load_after", report.load_after}};

    // Every contract key is present; null when its scenario did not run.
    for (const char* key :
         {"e2e_rows_per_s_1node", "e2e_rows_per_s_3nodes", "sql_floor_rows_per_s",
          "sql_limit_rows_per_s", "ratio_to_floor", "ratio_to_limit", "latency_p50_ms",
          "latency_p99_ms", "latency_max_ms", "node_cpu_s_per_10k", "pg_cpu_s_per_10k",
          "app_insert_cost_of_wake", "history_rows", "history_rows_per_s",
          "old_snapshot_rows_per_s", "clean_rows_per_s"}) {
        out[key] = nullptr;
    }

    const auto floor = median_run(report.floor_runs);
    if (floor) {
        out["sql_floor_rows_per_s"] = json_rate(floor->rows_per_s());
        out["sql_floor_runs"] = json::array();
        out["sql_floor_foreign_cpu"] = json::array();
        for (const auto& run : report.floor_runs) {
            out["sql_floor_runs"].push_back(json_rate(run.rows_per_s()));
            out["sql_floor_foreign_cpu"].push_back(json_fine(run.foreign_cpu));
        }
        out["sql_floor_pg_cpu_s_per_10k"] = json_fine(per_10k(floor->pg_cpu_s, floor->rows));
        out["sql_floor_wal_bytes_per_row"] = json_rate(per_row(floor->wal_bytes, floor->rows));
    }
    const auto best = best_cell(report);
    if (best) {
        out["sql_limit_rows_per_s"] = json_rate(best->second.rows_per_s());
        out["sql_limit_config"] = describe(best->first);
        json grid = json::array();
        for (const auto& [config, result] : report.grid) {
            grid.push_back(
                {{"config", describe(config)}, {"rows_per_s", json_rate(result.rows_per_s())}});
        }
        out["sql_limit_grid"] = grid;
    }
    const auto e2e_json = [&](const std::vector<E2eResult>& runs, const std::string& suffix) {
        const auto run = median_run(runs);
        if (!run) return;
        out["e2e_rows_per_s_" + suffix] = json_rate(run->rows_per_s());
        out["e2e_runs_" + suffix] = json::array();
        out["foreign_cpu_runs_" + suffix] = json::array();
        for (const auto& r : runs) {
            out["e2e_runs_" + suffix].push_back(json_rate(r.rows_per_s()));
            out["foreign_cpu_runs_" + suffix].push_back(json_fine(r.foreign_cpu));
        }
        out["e2e_complete_" + suffix] =
            std::all_of(runs.begin(), runs.end(), [](const E2eResult& r) { return r.complete; });
        out["node_cpu_s_per_10k_" + suffix] = json_fine(per_10k(run->node_cpu_s, run->rows));
        out["pg_cpu_s_per_10k_" + suffix] = json_fine(per_10k(run->pg_cpu_s, run->rows));
        out["worker_cpu_s_per_10k_" + suffix] = json_fine(per_10k(run->worker_cpu_s, run->rows));
        out["host_busy_" + suffix] = json_fine(run->host_busy);
        out["wal_bytes_per_row_" + suffix] = json_rate(per_row(run->wal_bytes, run->rows));
        out["foreign_cpu_" + suffix] = json_fine(run->foreign_cpu);
    };
    e2e_json(report.e2e_1node_runs, "1node");
    e2e_json(report.e2e_3node_runs, "3nodes");
    // The headline CPU costs are the 1-node run's (the 3-node figures sum three nodes).
    if (const auto run = median_run(report.e2e_1node_runs)) {
        out["node_cpu_s_per_10k"] = json_fine(per_10k(run->node_cpu_s, run->rows));
        out["pg_cpu_s_per_10k"] = json_fine(per_10k(run->pg_cpu_s, run->rows));
    }
    if (const auto e2e = best_e2e(report)) {
        if (floor) out["ratio_to_floor"] = json_fine(*e2e / floor->rows_per_s());
        if (best) out["ratio_to_limit"] = json_fine(*e2e / best->second.rows_per_s());
    }
    if (report.latency) {
        const auto& l = *report.latency;
        out["latency_p50_ms"] = json_fine(l.p50_ms);
        out["latency_p90_ms"] = json_fine(l.p90_ms);
        out["latency_p99_ms"] = json_fine(l.p99_ms);
        out["latency_max_ms"] = json_fine(l.max_ms);
        out["latency_rows"] = l.rows;
        out["latency_rows_planned"] = l.planned;
        out["latency_missing"] = l.missing;
        out["latency_rate_achieved"] = json_rate(l.achieved_rate);
        out["latency_node_cpu_share"] = json_fine(l.node_cpu_share);
    }
    if (report.wake) {
        const auto& w = *report.wake;
        out["app_insert_cost_of_wake"] = json_fine(w.cost());
        out["app_insert_rows_per_s_wake_off"] = json_rate(w.rows_per_s_off);
        out["app_insert_rows_per_s_wake_on"] = json_rate(w.rows_per_s_on);
        for (const double ratio : w.round_ratios) {
            out["app_insert_wake_round_ratios"].push_back(json_fine(ratio));
        }
    }
    if (report.history) {
        const auto& h = *report.history;
        const auto put = [&](const std::string& prefix, double clean, double history,
                             double snapshot) {
            out[prefix + "clean_rows_per_s"] = json_rate(clean);
            out[prefix + "history_rows_per_s"] = json_rate(history);
            if (h.history_rows == 5'000'000)
                out[prefix + "history_5m_rows_per_s"] = json_rate(history);
            out[prefix + "old_snapshot_rows_per_s"] = json_rate(snapshot);
            if (clean > 0) {
                out[prefix + "history_ratio_to_clean"] = json_fine(history / clean);
                out[prefix + "old_snapshot_ratio_to_clean"] = json_fine(snapshot / clean);
            }
        };
        out["history_claim_path"] = "outboxd e2e, 1 node (floor_*: sql floor loop)";
        out["history_rows"] = h.history_rows;
        put("", h.clean.rows_per_s(), h.history.rows_per_s(), h.old_snapshot.rows_per_s());
        out["old_snapshot_complete"] = h.old_snapshot.complete;
        out["old_snapshot_staged_rows"] = h.old_snapshot.staged;
        out["old_snapshot_seconds"] = json_fine(h.old_snapshot.seconds);
        put("floor_", h.floor_clean.rows_per_s(), h.floor_history.rows_per_s(),
            h.floor_old_snapshot.rows_per_s());
        out["floor_old_snapshot_capped"] = h.floor_old_snapshot.capped;
        for (const auto& [tag, runs] : h.runs) {
            for (const double r : runs) out["history_runs_" + tag].push_back(json_rate(r));
        }
    }
    add_routes_json(out, report);
    add_http_push_json(out, report);
    add_controls_json(out, report);
    add_results_json(out, report);
    add_clients_json(out, report);
    out["max_foreign_cpu"] = json_fine(max_foreign_cpu(report));
    out["total_seconds"] = json_rate(report.total_seconds);
    return out;
}

}  // namespace outboxd::bench
