#include "history_scenario.hpp"

#include <chrono>

#include <pqxx/pqxx>
#include <spdlog/spdlog.h>

namespace outboxd::bench {
namespace {

const ClaimLoopConfig kFloor{100, 1, Finish::complete, std::nullopt};
// The loop stops this long before the snapshot's limit, so the snapshot is never held longer.
constexpr std::int64_t kHolderMargin = 1000;

ClaimLoopResult staged_floor(const BenchContext& context, const std::string& url,
                             const ClaimLoopConfig& config) {
    stage_pending_rows(url, context.settings.rows, "hist-run-");
    settle(url);
    return run_claim_loop(url, config, context.pg_cpu);
}

}  // namespace

HistoryResult run_history(const BenchContext& context) {
    const auto& settings = context.settings;
    HistoryResult result;
    result.history_rows = settings.history_rows;

    {
        const auto url = context.databases.create_migrated("bench_history_clean");
        result.clean = staged_floor(context, url, kFloor);
        context.databases.drop("bench_history_clean");
        spdlog::info("history: clean table {:.0f} rows/s", result.clean.rows_per_s());
    }

    const std::string template_name = "bench_history_template";
    {
        const auto url = context.databases.create_migrated(template_name);
        spdlog::info("history: inserting {} finished rows", settings.history_rows);
        const auto start = std::chrono::steady_clock::now();
        insert_history_rows(url, settings.history_rows);
        settle(url);
        result.history_generate_seconds =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    }
    {
        const auto url = context.databases.create_copy("bench_history_b", template_name);
        result.history = staged_floor(context, url, kFloor);
        context.databases.drop("bench_history_b");
        spdlog::info("history: {} finished rows {:.0f} rows/s", settings.history_rows,
                     result.history.rows_per_s());
    }
    {
        // The template itself is (c)'s fresh copy: nothing has claimed from it.
        const auto url = context.databases.url(template_name);
        stage_pending_rows(url, settings.rows, "hist-run-");
        settle(url);
        pqxx::connection holder_conn{url};
        // REPEATABLE READ takes its snapshot at the first statement and keeps it until the
        // transaction ends: no row version the claims make obsolete can be pruned meanwhile.
        pqxx::transaction<pqxx::isolation_level::repeatable_read> holder{holder_conn};
        holder.exec("SELECT 1 FROM outbox LIMIT 1");
        auto config = kFloor;
        config.time_limit = std::chrono::milliseconds{
            static_cast<std::int64_t>(settings.snapshot_max_seconds * 1000) - kHolderMargin};
        result.old_snapshot = run_claim_loop(url, config, context.pg_cpu);
        holder.abort();
        spdlog::info("history: with an old snapshot {:.0f} rows/s{}",
                     result.old_snapshot.rows_per_s(),
                     result.old_snapshot.capped ? " (capped)" : "");
    }
    context.databases.drop(template_name);
    return result;
}

}  // namespace outboxd::bench
