#include "http_push_scenario.hpp"

#include <algorithm>
#include <chrono>
#include <fstream>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "bench_database.hpp"
#include "child_process.hpp"
#include "http_sink.hpp"
#include "node_fleet.hpp"
#include "proc_stat.hpp"
#include "report_format.hpp"
#include "target_setup.hpp"

namespace outboxd::bench {
namespace {

constexpr std::chrono::seconds kReadyTimeout{30};
// Targets of the HTTP push issue.
constexpr double kTargetRatioToWebSocket = 0.4;
constexpr double kTargetP50Ms = 5;
constexpr double kTargetP99Ms = 20;

// Sets the target `bench` of namespace default (activity noop) to `url` on the first node,
// and waits until that node serves it.
void put_http_target(NodeFleet& fleet, const std::string& url, int max_in_flight) {
    const nlohmann::json body = {{"activity_types", {"noop"}},
                                 {"url", url},
                                 {"max_in_flight", max_in_flight},
                                 {"timeout_ms", 30000}};
    put_target(fleet, "/v1/http-targets/bench", body, TargetReady::served);
}

// outboxd-receiver on a free port; its port, once it listens.
std::uint16_t await_listening(ChildProcess& receiver) {
    const auto deadline = std::chrono::steady_clock::now() + kReadyTimeout;
    for (;;) {
        std::ifstream in{receiver.log_path()};
        std::stringstream text;
        text << in.rdbuf();
        const auto log = text.str();
        if (const auto at = log.find("listening "); at != std::string::npos) {
            const auto colon = log.find(':', at);
            const auto end = log.find('\n', at);
            if (colon != std::string::npos && end != std::string::npos) {
                return static_cast<std::uint16_t>(std::stoi(log.substr(colon + 1, end - colon)));
            }
        }
        if (!receiver.alive()) {
            throw std::runtime_error{std::string{kReceiverBinary} +
                                     " exited: " + receiver.log_tail(10)};
        }
        if (std::chrono::steady_clock::now() > deadline) {
            throw std::runtime_error{std::string{kReceiverBinary} + " did not start"};
        }
        std::this_thread::sleep_for(std::chrono::milliseconds{20});
    }
}

E2eResult run_http_push(const BenchContext& base, const std::string& tag) {
    const LoopbackContext loopback{base};
    const auto& context = loopback.context;
    const auto& settings = context.settings;
    const auto database = "bench_" + tag;
    const auto url = context.databases.create_migrated(database);
    spdlog::info("{}: staging {} rows", tag, settings.http_rows);
    stage_pending_rows(url, settings.http_rows, "e2e-");
    settle(url);

    ChildSpec spec;
    spec.argv = {settings.bin_dir + "/" + std::string{kReceiverBinary}, "--listen", "127.0.0.1:0"};
    spec.log_path = settings.work_dir + "/bench-" + tag + "-receiver.log";
    ChildProcess receiver{spec};
    const auto port = await_listening(receiver);

    DrainOptions options;
    options.consume = [&](NodeFleet& fleet) {
        put_http_target(fleet, "http://127.0.0.1:" + std::to_string(port) + "/hook",
                        settings.http_max_in_flight);
        const auto before = process_cpu_seconds(receiver.pid());
        return std::function<double()>{
            [&receiver, before] { return process_cpu_seconds(receiver.pid()) - before; }};
    };
    auto result = drain_e2e(context, url, 1, tag, options);
    receiver.stop(std::chrono::milliseconds{1000});
    context.databases.drop(database);
    return result;
}

LatencyResult run_http_latency(const BenchContext& base) {
    const LoopbackContext loopback{base};
    const auto& context = loopback.context;
    const auto& settings = context.settings;
    return measure_latency(
        context, "http_latency", [&settings](NodeFleet& fleet, const Arrival& arrived) {
            auto sink = std::make_shared<HttpSink>(arrived);
            put_http_target(fleet, "http://127.0.0.1:" + std::to_string(sink->port()) + "/hook",
                            settings.http_max_in_flight);
            return std::function<void()>{[sink]() mutable { sink.reset(); }};
        });
}

}  // namespace

void HttpPushScenario::repeat(const Turn& turn) {
    // The same rows over WebSocket, then over HTTP: the ratio's two sides, same repetition.
    const auto ws_tag = "e2e_1n_http_volume" + turn.suffix();
    ws_runs_.push_back(run_e2e(turn.context, 1, ws_tag, turn.settings().http_rows));
    spdlog::info("{}: {:.0f} rows/s", ws_tag, ws_runs_.back().rows_per_s());
    push_runs_.push_back(run_http_push(turn.context, "http_push" + turn.suffix()));
    spdlog::info("http_push{}: {:.0f} rows/s", turn.suffix(), push_runs_.back().rows_per_s());
}

void HttpPushScenario::once(const Turn& turn) { latency_ = run_http_latency(turn.context); }

void HttpPushScenario::render_table(const BenchSettings& settings,
                                    const ScenarioRegistry& /*registry*/,
                                    ReportTable& table) const {
    const auto* push = median_run(push_runs_);
    if (!push && !latency_) return;
    std::string out = "\nHTTP push (1 node -> an HTTP target, max_in_flight " +
                      std::to_string(settings.http_max_in_flight) + ")\n";
    if (push) {
        const auto* ws = median_run(ws_runs_);
        const double ratio = ws && ws->rows_per_s() > 0 ? push->rows_per_s() / ws->rows_per_s() : 0;
        out += strf(
            "  %lld rows to an outboxd-receiver process: %.0f rows/s (runs %s); node cpu %.2f, "
            "receiver cpu %.2f s/10k\n",
            static_cast<long long>(settings.http_rows), push->rows_per_s(),
            rates_of(push_runs_).c_str(),
            push->node_cpu_s * 1e4 / std::max<double>(1.0, static_cast<double>(push->rows)),
            push->worker_cpu_s * 1e4 / std::max<double>(1.0, static_cast<double>(push->rows)));
        if (ws) {
            out += strf(
                "  the same rows over WebSocket: %.0f rows/s (runs %s); ratio %.3f (target >= "
                "%.1f: %s)\n",
                ws->rows_per_s(), rates_of(ws_runs_).c_str(), ratio, kTargetRatioToWebSocket,
                verdict(ratio >= kTargetRatioToWebSocket).c_str());
        }
    }
    if (latency_) {
        const auto& l = *latency_;
        out += strf(
            "  latency at %.0f rows/s (COMMIT returned -> request received by an endpoint in the "
            "driver): p50 %.2f ms (target <= %.0f: %s), p90 %.2f, p99 %.2f ms (target <= %.0f: "
            "%s), max %.2f; %lld of %lld rows, not received %lld\n",
            l.achieved_rate, l.p50_ms, kTargetP50Ms, verdict(l.p50_ms <= kTargetP50Ms).c_str(),
            l.p90_ms, l.p99_ms, kTargetP99Ms, verdict(l.p99_ms <= kTargetP99Ms).c_str(), l.max_ms,
            static_cast<long long>(l.rows), static_cast<long long>(l.planned),
            static_cast<long long>(l.missing));
    }
    table.put(std::string{kName}, out);
}

void HttpPushScenario::add_json(const ScenarioRegistry& /*registry*/, nlohmann::json& out) const {
    for (const char* key : {"http_push_rows_per_s", "http_push_ratio_to_ws",
                            "http_push_latency_p50_ms", "http_push_latency_p99_ms"}) {
        out[key] = nullptr;
    }
    if (const auto* push = median_run(push_runs_)) {
        out["http_push_rows_per_s"] = json_rate(push->rows_per_s());
        for (const auto& run : push_runs_)
            out["http_push_runs"].push_back(json_rate(run.rows_per_s()));
        out["http_push_complete"] = all_complete(push_runs_);
        if (const auto* ws = median_run(ws_runs_); ws && ws->rows_per_s() > 0) {
            out["http_push_ws_rows_per_s"] = json_rate(ws->rows_per_s());
            out["http_push_ratio_to_ws"] = json_fine(push->rows_per_s() / ws->rows_per_s());
        }
    }
    if (latency_) {
        const auto& l = *latency_;
        out["http_push_latency_p50_ms"] = json_fine(l.p50_ms);
        out["http_push_latency_p90_ms"] = json_fine(l.p90_ms);
        out["http_push_latency_p99_ms"] = json_fine(l.p99_ms);
        out["http_push_latency_max_ms"] = json_fine(l.max_ms);
        out["http_push_latency_missing"] = l.missing;
        out["http_push_latency_rate_achieved"] = json_rate(l.achieved_rate);
    }
}

double HttpPushScenario::max_foreign_cpu() const {
    double most = 0;
    for (const auto* runs : {&push_runs_, &ws_runs_}) {
        for (const auto& run : *runs) most = std::max(most, run.foreign_cpu);
    }
    return most;
}

}  // namespace outboxd::bench
