#include "heartbeat_scenario.hpp"

#include <chrono>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <pqxx/pqxx>
#include <spdlog/spdlog.h>

#include "http_client.hpp"
#include "outboxd/sdk/worker_client.hpp"
#include "report_format.hpp"
#include "wait_for.hpp"

namespace outboxd::bench {
namespace {

using Clock = std::chrono::steady_clock;

constexpr std::int64_t kTasks = 10'000;
constexpr std::chrono::seconds kBeatEvery{1};

HeartbeatResult run_heartbeats(const BenchContext& context) {
    const auto& settings = context.settings;
    const auto url = context.databases.create_migrated("bench_heartbeats");
    {
        pqxx::connection conn{url};
        pqxx::work tx{conn};
        tx.exec(
            "INSERT INTO outbox (dispatch_key, workflow_id, ordinal, activity_type)"
            " SELECT 'hb-' || n, 'hb-' || n, 0, 'long' FROM generate_series(1, " +
            std::to_string(kTasks) + ") n");
        tx.commit();
    }
    settle(url);
    NodeFleet fleet{context.fleet(url), 1, "heartbeats"};
    const auto put = http_request(fleet.http_urls().front(), "PUT", "/v1/namespaces/default",
                                  R"({"activities":{"long":{"heartbeat_timeout_ms":5000}}})");
    if (put.status != 200) throw std::runtime_error("heartbeats: PUT namespace: " + put.body);

    std::mutex mutex;
    std::vector<sdk::Responder> held;
    held.reserve(kTasks);
    sdk::WorkerOptions options;
    options.seed_urls = fleet.worker_urls();
    options.worker_id = "bench-heartbeats";
    options.activity_types = {"long"};
    options.max_in_flight = static_cast<std::int32_t>(kTasks);
    sdk::WorkerClient client{options, [&](const worker::protocol::Task&, sdk::Responder r) {
                                 const std::lock_guard lock{mutex};
                                 held.push_back(std::move(r));
                             }};
    // The namespace cache takes up to its TTL to see the policy: connect after it.
    std::this_thread::sleep_for(std::chrono::milliseconds{1500});
    const auto beat_all = [&] {
        const std::lock_guard lock{mutex};
        for (auto& responder : held) responder.heartbeat();
    };
    client.start();
    // The tasks that came first are kept alive while the rest arrive: on a slow (Debug) node
    // 10,000 pushes can take longer than the heartbeat timeout.
    auto last_beat = Clock::now();
    wait_for(
        "heartbeats", "the worker did not take every task",
        [&] {
            const std::lock_guard lock{mutex};
            return static_cast<std::int64_t>(held.size()) >= kTasks;
        },
        [&] {
            fleet.check_alive();
            if (Clock::now() - last_beat >= kBeatEvery) {
                beat_all();
                last_beat = Clock::now();
            }
        });
    spdlog::info("heartbeats: {} tasks outstanding; heartbeating each every {} s for {} s", kTasks,
                 kBeatEvery.count(), settings.heartbeat_seconds);

    beat_all();
    std::this_thread::sleep_for(kBeatEvery);  // the first round's writes land
    const auto beats_before = fleet.metric_sum("outboxd_heartbeats_total");
    const auto statements_before = fleet.metric_sum("outboxd_lease_statements_total");
    const auto rows_before = fleet.metric_sum("outboxd_lease_rows_total");
    const auto start = Clock::now();
    const auto window = std::chrono::duration<double>(settings.heartbeat_seconds);
    for (int round = 1; Clock::now() - start < window; ++round) {
        beat_all();
        fleet.check_alive();
        std::this_thread::sleep_until(start + round * kBeatEvery);
    }
    const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    HeartbeatResult result;
    result.tasks = kTasks;
    result.seconds = seconds;
    result.heartbeats_per_s =
        (fleet.metric_sum("outboxd_heartbeats_total") - beats_before) / seconds;
    result.statements_per_s =
        (fleet.metric_sum("outboxd_lease_statements_total") - statements_before) / seconds;
    result.rows_written_per_s =
        (fleet.metric_sum("outboxd_lease_rows_total") - rows_before) / seconds;

    {
        const std::lock_guard lock{mutex};
        for (auto& responder : held) responder.complete();
    }
    wait_for(
        "heartbeats", "the tasks were not all done", [&] { return fleet.rows_done() >= kTasks; },
        [&] { fleet.check_alive(); });
    pqxx::connection conn{url};
    pqxx::nontransaction tx{conn};
    result.redelivered =
        tx.exec1("SELECT count(*) FROM outbox WHERE attempt > 0 OR status <> 'done'")[0]
            .as<std::int64_t>();
    client.stop(std::chrono::milliseconds{1000});
    fleet.stop();
    spdlog::info("heartbeats: {:.0f} heartbeats/s, {:.1f} statements/s, {:.0f} rows written/s",
                 result.heartbeats_per_s, result.statements_per_s, result.rows_written_per_s);
    return result;
}

}  // namespace

void HeartbeatScenario::once(const Turn& turn) { result_ = run_heartbeats(turn.context); }

void HeartbeatScenario::render_table(const BenchSettings& /*settings*/,
                                     const ScenarioRegistry& /*registry*/,
                                     ReportTable& table) const {
    if (!result_) return;
    const auto& h = *result_;
    table.put(
        std::string{kName},
        strf("\nHeartbeats (1 node, %lld tasks outstanding, each heartbeating once a second, %.0f "
             "s)\n"
             "  %.0f heartbeats/s taken, %.1f lease statements/s (heartbeat_statements_per_s, "
             "target <= 50), %.0f rows written/s; redelivered %lld\n",
             static_cast<long long>(h.tasks), h.seconds, h.heartbeats_per_s, h.statements_per_s,
             h.rows_written_per_s, static_cast<long long>(h.redelivered)));
}

void HeartbeatScenario::add_json(const ScenarioRegistry& /*registry*/, nlohmann::json& out) const {
    out["heartbeat_statements_per_s"] = nullptr;
    if (!result_) return;
    const auto& h = *result_;
    out["heartbeat_statements_per_s"] = json_fine(h.statements_per_s);
    out["heartbeats_per_s"] = json_rate(h.heartbeats_per_s);
    out["heartbeat_rows_written_per_s"] = json_rate(h.rows_written_per_s);
    out["heartbeat_tasks_redelivered"] = h.redelivered;
}

}  // namespace outboxd::bench
