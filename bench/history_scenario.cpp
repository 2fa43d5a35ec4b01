#include "history_scenario.hpp"

#include <algorithm>
#include <chrono>
#include <memory>

#include <pqxx/pqxx>
#include <spdlog/spdlog.h>

#include "report_format.hpp"

namespace outboxd::bench {
namespace {

// Runs stop this long before the snapshot's limit, so the snapshot is never held longer.
constexpr double kHolderMarginSeconds = 1.0;
const std::string kTemplate = "bench_history_template";
// Target of issue 7.
constexpr double kTargetHistoryRatio = 0.8;

// A REPEATABLE READ transaction takes its snapshot at its first statement and keeps it
// until it ends: no row version the claims make obsolete can be pruned meanwhile.
class SnapshotHolder {
public:
    explicit SnapshotHolder(const std::string& url) : conn_(url) {}
    void open() {
        tx_ = std::make_unique<pqxx::transaction<pqxx::isolation_level::repeatable_read>>(conn_);
        tx_->exec("SELECT 1 FROM outbox LIMIT 1");
    }
    ~SnapshotHolder() {
        if (tx_) tx_->abort();
    }

private:
    pqxx::connection conn_;
    std::unique_ptr<pqxx::transaction<pqxx::isolation_level::repeatable_read>> tx_;
};

// A database holding N staged rows: fresh, or a copy of the history template.
std::string staged_database(const BenchContext& context, const std::string& name, bool history,
                            std::int64_t rows) {
    auto url = history ? context.databases.create_copy(name, kTemplate)
                       : context.databases.create_migrated(name);
    stage_pending_rows(url, rows, "hist-run-");
    settle(url);
    return url;
}

// Adds a run to the pooled figure of its condition: rows over seconds of all runs.
void pool(E2eResult& total, const E2eResult& run) {
    total.nodes = run.nodes;
    total.rows += run.rows;
    total.seconds += run.seconds;
    total.staged = run.staged;
    total.complete = total.complete && run.complete;
    total.node_cpu_s += run.node_cpu_s;
    total.worker_cpu_s += run.worker_cpu_s;
    total.pg_cpu_s += run.pg_cpu_s;
    total.wal_bytes += run.wal_bytes;
    total.host_busy = std::max(total.host_busy, run.host_busy);
    total.foreign_cpu = std::max(total.foreign_cpu, run.foreign_cpu);
}

struct Condition {
    const char* tag;
    bool history;
    bool old_snapshot;
    E2eResult* e2e;
    ClaimLoopResult* floor;
};

std::string history_label(std::int64_t rows) {
    if (rows % 1'000'000 == 0) return std::to_string(rows / 1'000'000) + "M";
    if (rows % 1'000 == 0) return std::to_string(rows / 1'000) + "k";
    return std::to_string(rows);
}

HistoryResult run_history(const BenchContext& context) {
    const auto& settings = context.settings;
    HistoryResult result;
    result.history_rows = settings.history_rows;
    {
        const auto url = context.databases.create_migrated(kTemplate);
        spdlog::info("history: inserting {} finished rows", settings.history_rows);
        const auto start = std::chrono::steady_clock::now();
        insert_history_rows(url, settings.history_rows);
        settle(url);
        result.history_generate_seconds =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    }
    const double snapshot_limit = settings.snapshot_max_seconds - kHolderMarginSeconds;
    const std::vector<Condition> conditions{
        {"clean", false, false, &result.clean, &result.floor_clean},
        {"history", true, false, &result.history, &result.floor_history},
        {"old_snapshot", true, true, &result.old_snapshot, &result.floor_old_snapshot},
    };
    // outboxd drains the same volume under every condition, enough to keep claiming for
    // most of the snapshot's lifetime, with the same time limit: only the history and the
    // snapshot differ, not how much WAL, how many checkpoints or how much table growth fall
    // into the run. The machine's speed drifts by tens of percent over minutes, so the
    // conditions take turns (clean, history, snapshot, clean, …) and each one's figure is
    // pooled over its runs.
    const auto e2e_rows = settings.snapshot_rows > 0 ? settings.snapshot_rows : settings.rows;
    for (int run = 0; run < settings.history_repeat; ++run) {
        for (const auto& condition : conditions) {
            const auto name = std::string{"bench_history_"} + condition.tag;
            {
                const auto url = staged_database(context, name, condition.history, e2e_rows);
                SnapshotHolder holder{url};
                DrainOptions options;
                options.max_seconds = snapshot_limit;
                if (condition.old_snapshot) options.at_start = [&holder] { holder.open(); };
                const auto e2e = drain_e2e(context, url, 1, name, options);
                spdlog::info("history: {} e2e {:.0f} rows/s", condition.tag, e2e.rows_per_s());
                result.runs[condition.tag].push_back(e2e.rows_per_s());
                pool(*condition.e2e, e2e);
            }
            context.databases.drop(name);
        }
    }
    // The SQL floor loop once per condition, on N rows (under the snapshot with the same
    // time limit): it shows what the naive claim from the front of the index does.
    for (const auto& condition : conditions) {
        const auto name = std::string{"bench_history_floor_"} + condition.tag;
        {
            const auto url = staged_database(context, name, condition.history, settings.rows);
            SnapshotHolder holder{url};
            auto config = kFloorLoop;
            if (condition.old_snapshot) {
                holder.open();
                config.time_limit =
                    std::chrono::milliseconds{static_cast<std::int64_t>(snapshot_limit * 1000)};
            }
            *condition.floor = run_claim_loop(url, config, context.pg_cpu);
            spdlog::info("history: {} floor loop {:.0f} rows/s", condition.tag,
                         condition.floor->rows_per_s());
        }
        context.databases.drop(name);
    }
    context.databases.drop(kTemplate);
    return result;
}

}  // namespace

void HistoryScenario::once(const Turn& turn) { result_ = run_history(turn.context); }

void HistoryScenario::render_table(const BenchSettings& settings,
                                   const ScenarioRegistry& /*registry*/, ReportTable& table) const {
    if (!result_) return;
    const auto& h = *result_;
    std::string out = strf(
        "\nClaim cost vs history (outboxd: 1 node, end to end, the target: %lld staged "
        "rows per run, stopped at %.0f s, %d run(s) per condition taking turns, "
        "pooled; SQL floor loop: claim 100 + complete from the front, 1 client, %lld "
        "rows)\n",
        static_cast<long long>(h.old_snapshot.staged), settings.snapshot_max_seconds - 1,
        settings.history_repeat, static_cast<long long>(settings.rows));
    out += strf("  %-40s %10s %7s %12s %7s\n", "", "outboxd", "ratio", "floor loop", "ratio");
    const double clean = h.clean.rows_per_s();
    const double floor_clean = h.floor_clean.rows_per_s();
    const auto line = [&](const std::string& name, const E2eResult& e2e,
                          const ClaimLoopResult& floor, bool judged) {
        const double ratio = clean > 0 ? e2e.rows_per_s() / clean : 0;
        std::string stopped;
        if (!e2e.complete) stopped += "  (outboxd stopped at the limit)";
        if (floor.capped) stopped += strf("  (floor loop stopped at %.0f s)", floor.seconds);
        out += strf(
            "  %-40s %10.0f %7s %12.0f %7s%s%s\n", name.c_str(), e2e.rows_per_s(),
            judged ? strf("%.2f", ratio).c_str() : "", floor.rows_per_s(),
            judged && floor_clean > 0 ? strf("%.2f", floor.rows_per_s() / floor_clean).c_str() : "",
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
        out += strf("  outboxd runs, %s:%s rows/s\n", tag.c_str(), rates.c_str());
    }
    out += strf("  (history generated in %.0f s)\n", h.history_generate_seconds);
    table.put(std::string{kName}, out);
}

void HistoryScenario::add_json(const ScenarioRegistry& /*registry*/, nlohmann::json& out) const {
    for (const char* key :
         {"history_rows", "history_rows_per_s", "old_snapshot_rows_per_s", "clean_rows_per_s"}) {
        out[key] = nullptr;
    }
    if (!result_) return;
    const auto& h = *result_;
    const auto put = [&](const std::string& prefix, double clean, double history, double snapshot) {
        out[prefix + "clean_rows_per_s"] = json_rate(clean);
        out[prefix + "history_rows_per_s"] = json_rate(history);
        if (h.history_rows == 5'000'000) out[prefix + "history_5m_rows_per_s"] = json_rate(history);
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

double HistoryScenario::max_foreign_cpu() const {
    if (!result_) return 0;
    const auto& h = *result_;
    double most = 0;
    for (const auto* run : {&h.clean, &h.history, &h.old_snapshot}) {
        most = std::max(most, run->foreign_cpu);
    }
    for (const auto* run : {&h.floor_clean, &h.floor_history, &h.floor_old_snapshot}) {
        most = std::max(most, run->foreign_cpu);
    }
    return most;
}

}  // namespace outboxd::bench
