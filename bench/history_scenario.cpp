#include "history_scenario.hpp"

#include <algorithm>
#include <chrono>
#include <memory>

#include <pqxx/pqxx>
#include <spdlog/spdlog.h>

namespace outboxd::bench {
namespace {

const ClaimLoopConfig kFloor{100, 1, Finish::complete, std::nullopt};
// Runs stop this long before the snapshot's limit, so the snapshot is never held longer.
constexpr double kHolderMarginSeconds = 1.0;
const std::string kTemplate = "bench_history_template";

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

}  // namespace

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
            auto config = kFloor;
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

}  // namespace outboxd::bench
