#include "latency_scenario.hpp"

#include <chrono>
#include <memory>
#include <stdexcept>
#include <thread>

#include "node_fleet.hpp"
#include "outboxd/sdk/worker_client.hpp"
#include "report_format.hpp"

namespace outboxd::bench {
namespace {

using Clock = std::chrono::steady_clock;

constexpr std::chrono::seconds kConnectTimeout{30};
// Targets of issue 7.
constexpr double kTargetP50Ms = 2;
constexpr double kTargetP99Ms = 10;

LatencyResult run_latency(const BenchContext& context) {
    const auto& settings = context.settings;
    // The receiving side: an in-process SDK worker.
    return measure_latency(
        context, "latency", [&settings](NodeFleet& fleet, const Arrival& arrived) {
            sdk::WorkerOptions options;
            options.seed_urls = fleet.worker_urls();
            options.worker_id = "bench-latency-worker";
            options.activity_types = {"noop"};
            options.max_in_flight = settings.worker_max_in_flight;
            auto client = std::make_shared<sdk::WorkerClient>(
                options, [arrived](const worker::protocol::Task& task, sdk::Responder responder) {
                    arrived(task.dispatch_key);
                    responder.complete();
                });
            client->start();
            const auto connect_deadline = Clock::now() + kConnectTimeout;
            while (client->stats().connected_nodes == 0) {
                fleet.check_alive();
                if (Clock::now() > connect_deadline) {
                    throw std::runtime_error{"SDK worker did not connect"};
                }
                std::this_thread::sleep_for(std::chrono::milliseconds{20});
            }
            return std::function<void()>{
                [client] { client->stop(std::chrono::milliseconds{1000}); }};
        });
}

}  // namespace

void LatencyScenario::once(const Turn& turn) { result_ = run_latency(turn.context); }

void LatencyScenario::render_table(const BenchSettings& settings,
                                   const ScenarioRegistry& /*registry*/, ReportTable& table) const {
    if (!result_) return;
    const auto& l = *result_;
    table.put(
        std::string{kName},
        strf("\nLatency at %.0f rows/s (COMMIT returned -> task received by an in-process "
             "SDK worker; 1 node)\n",
             settings.latency_rate) +
            strf("  %lld of %lld rows staged after a %.0f s warm-up, achieved %.0f rows/s%s, "
                 "not received %lld, node cpu %.0f%% of a core\n",
                 static_cast<long long>(l.rows), static_cast<long long>(l.planned),
                 settings.latency_warmup_seconds, l.achieved_rate,
                 l.achieved_rate < 0.95 * settings.latency_rate ? " (BELOW the target rate)" : "",
                 static_cast<long long>(l.missing), l.node_cpu_share * 100) +
            strf("  p50 %.2f ms (target <= %.0f: %s)   p90 %.2f ms   p99 %.2f ms (target <= %.0f: "
                 "%s)   max %.2f ms\n",
                 l.p50_ms, kTargetP50Ms, verdict(l.p50_ms <= kTargetP50Ms).c_str(), l.p90_ms,
                 l.p99_ms, kTargetP99Ms, verdict(l.p99_ms <= kTargetP99Ms).c_str(), l.max_ms));
}

void LatencyScenario::add_json(const ScenarioRegistry& /*registry*/, nlohmann::json& out) const {
    for (const char* key : {"latency_p50_ms", "latency_p99_ms", "latency_max_ms"}) {
        out[key] = nullptr;
    }
    if (!result_) return;
    const auto& l = *result_;
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

}  // namespace outboxd::bench
