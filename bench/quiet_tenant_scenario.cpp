#include "quiet_tenant_scenario.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <pqxx/pqxx>
#include <spdlog/spdlog.h>

#include "outboxd/sdk/worker_client.hpp"
#include "percentile.hpp"
#include "report_format.hpp"
#include "wait_for.hpp"

namespace outboxd::bench {
namespace {

using Clock = std::chrono::steady_clock;

constexpr const char* kBusy = "busy";
constexpr const char* kQuiet = "quiet";
constexpr const char* kKeyPrefix = "quiet-";
constexpr std::chrono::seconds kDrainTimeout{10};
constexpr std::chrono::milliseconds kPoll{20};
// Credit of the quiet tenant's worker: a small service's, more than one row a second needs.
constexpr int kQuietMaxInFlight = 16;
// The busy tenant must still have this many seconds of rows to do at its current rate for
// the next quiet row to be committed.
constexpr double kBacklogSecondsLeft = 1.5;
constexpr double kMinRateInterval = 0.5;  // seconds
// Target of the many-routes issue.
constexpr double kTargetQuietP99Ms = 50;

std::int64_t now_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch())
        .count();
}

QuietTenantResult run_quiet_tenant(const BenchContext& context) {
    const auto& settings = context.settings;
    const std::string database = "bench_quiet_tenant";
    const auto url = context.databases.create_migrated(database);
    spdlog::info("quiet_tenant: staging {} rows in namespace '{}'", settings.quiet_busy_rows,
                 kBusy);
    stage_routed_rows(url, settings.quiet_busy_rows, "busy-", {kBusy}, {"default"});
    settle(url);
    const auto fleet_settings = context.fleet(url);
    NodeFleet fleet{fleet_settings, 1, "quiet_tenant"};

    QuietTenantResult result;
    result.planned = static_cast<std::int64_t>(settings.quiet_seconds);
    const auto rows = static_cast<std::size_t>(result.planned);
    std::vector<std::atomic<std::int64_t>> committed(rows);
    std::vector<std::atomic<std::int64_t>> received(rows);

    sdk::WorkerOptions options;
    options.seed_urls = fleet.worker_urls();
    options.worker_id = "bench-quiet-tenant-worker";
    options.namespaces = {kQuiet};
    options.activity_types = {"noop"};
    options.max_in_flight = kQuietMaxInFlight;
    sdk::WorkerClient client{
        options, [&received](const worker::protocol::Task& task, sdk::Responder responder) {
            const auto at = now_ns();
            if (task.dispatch_key.rfind(kKeyPrefix, 0) == 0) {
                const auto row =
                    std::stoull(task.dispatch_key.substr(std::string{kKeyPrefix}.size()));
                if (row < received.size()) {
                    std::int64_t unset = 0;
                    received[row].compare_exchange_strong(unset, at);  // first delivery
                }
            }
            responder.complete();
        }};
    client.start();
    wait_for(
        "quiet_tenant", "the SDK worker did not connect",
        [&] { return client.stats().connected_nodes > 0; }, [&] { fleet.check_alive(); });

    WorkerFleet workers{fleet_settings,
                        {WorkerGroup{"worker",
                                     settings.worker_processes,
                                     {kBusy},
                                     "default",
                                     settings.worker_max_in_flight}},
                        fleet.worker_urls().front(),
                        "quiet_tenant"};
    wait_for(
        "quiet_tenant", "the busy tenant did not start", [&] { return fleet.rows_done(kBusy) > 0; },
        [&] {
            fleet.check_alive();
            workers.check_alive();
        });
    spdlog::info("quiet_tenant: busy tenant draining; committing one '{}' row a second for {} s",
                 kQuiet, rows);

    pqxx::connection conn{url};
    conn.prepare("stage",
                 "INSERT INTO outbox (dispatch_key, workflow_id, ordinal, namespace, activity_type)"
                 " VALUES ($1, $2, 0, 'quiet', 'noop')");
    const auto start = Clock::now();
    auto busy_before = fleet.rows_done(kBusy);
    const auto busy_first = busy_before;
    auto last_sample = start;
    for (std::size_t row = 0; row < rows; ++row) {
        std::this_thread::sleep_until(start + std::chrono::seconds{row});
        {
            pqxx::work tx{conn};
            tx.exec_prepared("stage", kKeyPrefix + std::to_string(row),
                             "quiet-wf-" + std::to_string(row));
            tx.commit();
        }
        committed[row] = now_ns();
        ++result.rows;
        fleet.check_alive();
        workers.check_alive();
        // Read after the commit, so that it never delays one; the first row comes too soon
        // after the start for a rate.
        const auto busy_done = fleet.rows_done(kBusy);
        const auto now = Clock::now();
        const double interval = std::chrono::duration<double>(now - last_sample).count();
        if (interval < kMinRateInterval) continue;
        const double rate = static_cast<double>(busy_done - busy_before) / interval;
        busy_before = busy_done;
        last_sample = now;
        if (row + 1 < rows && static_cast<double>(settings.quiet_busy_rows - busy_done) <
                                  rate * kBacklogSecondsLeft) {
            result.backlog_lasted = false;
            spdlog::warn("quiet_tenant: the busy backlog is running out after {} quiet rows",
                         row + 1);
            break;
        }
    }
    result.busy_rows_per_s =
        static_cast<double>(busy_before - busy_first) /
        std::max(1e-3, std::chrono::duration<double>(last_sample - start).count());

    const auto all_received = [&] {
        for (std::size_t row = 0; row < rows; ++row) {
            if (committed[row].load() != 0 && received[row].load() == 0) return false;
        }
        return true;
    };
    const auto drain_deadline = Clock::now() + kDrainTimeout;
    while (!all_received() && Clock::now() < drain_deadline) std::this_thread::sleep_for(kPoll);
    std::vector<double> latencies;
    for (std::size_t row = 0; row < rows; ++row) {
        const auto at_commit = committed[row].load();
        const auto at_arrival = received[row].load();
        if (at_commit == 0) continue;
        if (at_arrival == 0) {
            ++result.missing;
            continue;
        }
        latencies.push_back(static_cast<double>(at_arrival - at_commit) / 1e6);
    }
    std::sort(latencies.begin(), latencies.end());
    result.p50_ms = percentile(latencies, 50);
    result.p99_ms = percentile(latencies, 99);
    result.max_ms = latencies.empty() ? 0 : latencies.back();
    spdlog::info(
        "quiet_tenant: {} rows, p50 {:.2f} ms, p99 {:.2f} ms, max {:.2f} ms; busy tenant "
        "{:.0f} rows/s",
        result.rows, result.p50_ms, result.p99_ms, result.max_ms, result.busy_rows_per_s);

    client.stop(std::chrono::milliseconds{1000});
    workers.stop();
    fleet.stop();
    context.databases.drop(database);
    return result;
}

}  // namespace

void QuietTenantScenario::once(const Turn& turn) { result_ = run_quiet_tenant(turn.context); }

void QuietTenantScenario::render_table(const BenchSettings& settings,
                                       const ScenarioRegistry& /*registry*/,
                                       ReportTable& table) const {
    if (!result_) return;
    const auto& q = *result_;
    table.put(std::string{kName},
              strf("  quiet tenant, 1 row/s beside a %lld-row backlog: p50 %.2f ms, p99 %.2f ms "
                   "(target <= %.0f: %s), max %.2f ms; %lld of %lld rows%s, not received %lld; "
                   "busy tenant %.0f rows/s\n",
                   static_cast<long long>(settings.quiet_busy_rows), q.p50_ms, q.p99_ms,
                   kTargetQuietP99Ms, verdict(q.p99_ms <= kTargetQuietP99Ms).c_str(), q.max_ms,
                   static_cast<long long>(q.rows), static_cast<long long>(q.planned),
                   q.backlog_lasted ? "" : " (the busy backlog ran out first)",
                   static_cast<long long>(q.missing), q.busy_rows_per_s));
}

void QuietTenantScenario::add_json(const ScenarioRegistry& /*registry*/,
                                   nlohmann::json& out) const {
    out["quiet_tenant_p99_ms"] = nullptr;
    if (!result_) return;
    const auto& q = *result_;
    out["quiet_tenant_p50_ms"] = json_fine(q.p50_ms);
    out["quiet_tenant_p99_ms"] = json_fine(q.p99_ms);
    out["quiet_tenant_max_ms"] = json_fine(q.max_ms);
    out["quiet_tenant_rows"] = q.rows;
    out["quiet_tenant_rows_planned"] = q.planned;
    out["quiet_tenant_missing"] = q.missing;
    out["quiet_tenant_backlog_lasted"] = q.backlog_lasted;
    out["quiet_tenant_busy_rows_per_s"] = json_rate(q.busy_rows_per_s);
}

}  // namespace outboxd::bench
