#include "e2e_drain.hpp"

#include <unistd.h>

#include <chrono>
#include <memory>
#include <thread>

#include <pqxx/pqxx>
#include <spdlog/spdlog.h>

namespace outboxd::bench {
namespace {

constexpr std::chrono::milliseconds kPollInterval{100};
constexpr std::chrono::seconds kProgressInterval{5};

double epoch_seconds(std::chrono::system_clock::time_point t) {
    return std::chrono::duration<double>(t.time_since_epoch()).count();
}

// Pending or claimed rows left; cheap at any backlog: both probes walk a partial index.
bool rows_left(pqxx::connection& conn) {
    pqxx::nontransaction tx{conn};
    return tx
        .exec1(
            "SELECT EXISTS (SELECT 1 FROM outbox WHERE status = 'pending')"
            " OR EXISTS (SELECT 1 FROM outbox WHERE status = 'claimed')")[0]
        .as<bool>();
}

}  // namespace

E2eResult run_e2e(const BenchContext& context, int nodes, const std::string& tag,
                  std::optional<std::int64_t> rows) {
    const auto database = "bench_" + tag;
    const auto url = context.databases.create_migrated(database);
    const auto staged = rows.value_or(context.settings.rows);
    spdlog::info("{}: staging {} rows", tag, staged);
    stage_pending_rows(url, staged, "e2e-");
    settle(url);
    auto result = drain_e2e(context, url, nodes, tag);
    context.databases.drop(database);
    return result;
}

E2eResult run_e2e_with_results(const BenchContext& context, const std::string& tag,
                               std::size_t result_bytes) {
    const auto& settings = context.settings;
    const auto database = "bench_" + tag;
    const auto url = context.databases.create_migrated(database);
    spdlog::info("{}: staging {} rows (workers answer {}-byte results)", tag, settings.rows,
                 result_bytes);
    stage_pending_rows(url, settings.rows, "e2e-");
    settle(url);
    DrainOptions options;
    options.workers.push_back({"worker",
                               settings.worker_processes,
                               {"default"},
                               "default",
                               settings.worker_max_in_flight,
                               result_bytes});
    auto result = drain_e2e(context, url, 1, tag, options);
    context.databases.drop(database);
    return result;
}

WorkerGroup default_workers(const BenchSettings& settings) {
    return {
        "worker", settings.worker_processes, {"default"}, "default", settings.worker_max_in_flight};
}

E2eResult drain_e2e(const BenchContext& context, const std::string& url, int nodes,
                    const std::string& tag, const DrainOptions& options) {
    const auto& settings = context.settings;
    E2eResult result;
    result.nodes = nodes;
    const auto fleet_settings = context.fleet(url);
    NodeFleet fleet{fleet_settings, nodes, tag};
    if (options.with_nodes) options.with_nodes(fleet);
    auto groups = options.workers;
    if (groups.empty()) {
        groups.push_back(default_workers(settings));
    }
    int processes = 0;
    for (const auto& group : groups) processes += group.count;
    if (options.consume) {
        spdlog::info("{}: {} node(s) up and balanced; starting the consumer", tag, nodes);
    } else {
        spdlog::info("{}: {} node(s) up and balanced; starting {} worker process(es)", tag, nodes,
                     processes);
    }

    auto conn_holder = std::make_unique<pqxx::connection>(url);
    auto& conn = *conn_holder;
    const auto wal_before = wal_position(conn);
    const auto host_before = read_host_cpu();
    const auto pg_before = context.pg_cpu.sample();
    const auto node_before = fleet.cpu_seconds();
    const auto self_before = process_cpu_seconds(::getpid());
    // Rows already done (a history) are not part of the run.
    const auto done_before = count_rows(conn, "status = 'done'");
    result.staged = count_rows(conn, "status IN ('pending', 'claimed')");
    result.rows = result.staged;
    const auto rounds_before = fleet.claim_rounds();
    if (options.at_start) options.at_start();
    const auto start = std::chrono::system_clock::now();
    std::function<double()> consumer_cpu;
    if (options.consume) {
        consumer_cpu = options.consume(fleet);
        groups.clear();
    }
    WorkerFleet workers{fleet_settings, groups, fleet.worker_urls().front(), tag};
    const auto timeout = std::chrono::duration_cast<std::chrono::steady_clock::duration>(
        std::chrono::duration<double>(options.max_seconds.value_or(settings.e2e_max_seconds)));
    auto next_progress = std::chrono::steady_clock::now() + kProgressInterval;
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
        std::this_thread::sleep_for(kPollInterval);
        // The nodes' own count, then the database's word (cheap by then: nothing left).
        if (fleet.rows_done() >= result.staged && !rows_left(conn)) break;
        fleet.check_alive();
        workers.check_alive();
        const auto now = std::chrono::steady_clock::now();
        if (now > deadline) {
            result.complete = false;
            break;
        }
        if (now > next_progress) {
            next_progress = now + kProgressInterval;
            spdlog::info("{}: {} of {} rows done", tag, fleet.rows_done(), result.staged);
        }
    }
    const auto rounds_after = fleet.claim_rounds();
    result.claim_rounds = rounds_after.rounds - rounds_before.rounds;
    result.claim_seconds = rounds_after.seconds - rounds_before.seconds;
    result.node_cpu_s = fleet.cpu_seconds() - node_before;
    result.worker_cpu_s = workers.cpu_seconds();  // they started inside the window
    if (consumer_cpu) result.worker_cpu_s += consumer_cpu();
    result.pg_cpu_s = context.pg_cpu.sample() - pg_before;
    const auto host_after = read_host_cpu();
    result.host_busy = busy_fraction(host_before, host_after);
    result.foreign_cpu = foreign_share(host_before, host_after,
                                       result.node_cpu_s + result.worker_cpu_s + result.pg_cpu_s +
                                           process_cpu_seconds(::getpid()) - self_before);
    result.wal_bytes = wal_position(conn) - wal_before;

    {
        pqxx::nontransaction tx{conn};
        const auto row = tx.exec1(
            "SELECT count(*), extract(epoch FROM max(finished_at))::float8 FROM outbox"
            " WHERE status = 'done'");
        const auto done = row[0].as<std::int64_t>() - done_before;
        const double last_finished = row[1].is_null() ? 0.0 : row[1].as<double>();
        if (done != result.staged) result.complete = false;
        result.rows = done;
        const double end =
            result.complete ? last_finished : epoch_seconds(std::chrono::system_clock::now());
        result.seconds = end - epoch_seconds(start);
    }
    if (!result.complete) {
        spdlog::warn("{}: stopped after {:.0f} s with {} of {} rows done", tag, result.seconds,
                     result.rows, result.staged);
    }
    workers.stop();
    fleet.stop();
    return result;
}

}  // namespace outboxd::bench
