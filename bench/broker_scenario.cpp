#include "broker_scenario.hpp"

#include <algorithm>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "bench_database.hpp"
#include "broker_process.hpp"
#include "nats_subscriber.hpp"
#include "outboxd/broker_admin/broker_admin.hpp"
#include "proc_stat.hpp"
#include "report_format.hpp"
#include "target_setup.hpp"

namespace outboxd::bench {
namespace {

// Targets of the broker targets issue.
constexpr double kTargetRatioToWebSocket = 0.5;
constexpr double kTargetP50Ms = 5;
constexpr double kTargetP99Ms = 20;

// Where the target `bench` publishes: rows of activity noop to subject bench.noop, which the
// stream BENCH stores; to exchange bench with routing key noop, which queue bench takes.
constexpr const char* kTargetPath = "/v1/targets/bench";
constexpr const char* kStream = "BENCH";
constexpr const char* kStreamSubjects = "bench.>";
constexpr const char* kExchange = "bench";
constexpr const char* kQueue = "bench";
// What the targets publish: the subject and routing key of activity noop, and the body of a
// row staged without input (jsonb 'null').
constexpr const char* kSubject = "bench.noop";
constexpr const char* kRoutingKey = "noop";
constexpr const char* kBody = "null";
constexpr int kTargetTimeoutMs = 30000;

nlohmann::json target_body(const BenchSettings& settings, const std::string& kind,
                           const std::string& url) {
    return {{"kind", kind},
            {"namespace", "default"},
            {"activity_types", {"noop"}},
            {"url", url},
            {"max_in_flight", settings.broker_max_in_flight},
            {"timeout_ms", kTargetTimeoutMs}};
}

nlohmann::json nats_target(const BenchSettings& settings, const std::string& url) {
    auto body = target_body(settings, "nats", url);
    body["subject"] = "bench.{activity_type}";
    return body;
}

nlohmann::json amqp_target(const BenchSettings& settings, const std::string& url) {
    auto body = target_body(settings, "amqp", url);
    body["exchange"] = kExchange;
    body["routing_key"] = "{activity_type}";
    return body;
}

// settings.broker_rows rows staged and drained by one node into the target `body`, set as the
// clock starts; the broker's CPU (process `broker`) counts as the consumer's.
E2eResult drain_to_broker(const BenchContext& context, const std::string& tag, pid_t broker,
                          const nlohmann::json& body) {
    const auto& settings = context.settings;
    const auto database = "bench_" + tag;
    const auto url = context.databases.create_migrated(database);
    spdlog::info("{}: staging {} rows", tag, settings.broker_rows);
    stage_pending_rows(url, settings.broker_rows, "e2e-");
    settle(url);
    DrainOptions options;
    options.consume = [&](NodeFleet& fleet) {
        put_target(fleet, kTargetPath, body, TargetReady::connected);
        const auto before = process_cpu_seconds(broker);
        return std::function<double()>{
            [broker, before] { return process_cpu_seconds(broker) - before; }};
    };
    auto result = drain_e2e(context, url, 1, tag, options);
    context.databases.drop(database);
    return result;
}

std::string broker_dir(const BenchSettings& settings, const std::string& tag) {
    return settings.work_dir + "/" + tag;
}

double rate(std::int64_t rows, double seconds) {
    return seconds > 0 ? static_cast<double>(rows) / seconds : 0;
}

LatencyResult run_nats_latency(const BenchContext& base) {
    const LoopbackContext loopback{base};
    const auto& context = loopback.context;
    const auto& settings = context.settings;
    const NatsProcess nats{broker_dir(settings, "nats_latency-server")};
    broker_admin::create_stream(nats.url(), kStream, {kStreamSubjects});
    return measure_latency(
        context, "nats_latency", [&nats, &settings](NodeFleet& fleet, const Arrival& arrived) {
            auto subscriber =
                std::make_shared<NatsSubscriber>(nats.url(), kStreamSubjects, arrived);
            put_target(fleet, kTargetPath, nats_target(settings, nats.url()),
                       TargetReady::connected);
            return std::function<void()>{[subscriber]() mutable { subscriber.reset(); }};
        });
}

// A broker's runs in the table: rows/s, CPU, what the broker held.
std::string broker_line(const char* what, std::int64_t rows, const BrokerRun& median,
                        const std::vector<BrokerRun>& runs) {
    std::string stored;
    for (const auto& run : runs)
        stored += (stored.empty() ? "" : ", ") + std::to_string(run.stored);
    return strf(
        "  %lld rows to %s: %.0f rows/s (runs %s); node cpu %.2f, broker cpu %.2f s/10k; "
        "messages stored %s\n",
        static_cast<long long>(rows), what, median.rows_per_s(), rates_of(runs).c_str(),
        per_10k(median.drain.node_cpu_s, median.drain.rows),
        per_10k(median.drain.worker_cpu_s, median.drain.rows), stored.c_str());
}

std::string ratio_line(const char* what, const BrokerRun* run, const E2eResult* ws) {
    if (!run || !ws || ws->rows_per_s() <= 0) return {};
    const double ratio = run->rows_per_s() / ws->rows_per_s();
    return strf("  %s / WebSocket: %.3f (target >= %.1f: %s)\n", what, ratio,
                kTargetRatioToWebSocket, verdict(ratio >= kTargetRatioToWebSocket).c_str());
}

// The median of the runs' limits; none without runs.
std::optional<double> median_limit(const std::vector<BrokerRun>& runs) {
    std::vector<double> limits;
    for (const auto& run : runs) limits.push_back(run.limit_rows_per_s);
    return median(limits);
}

// The broker's own limit and the target's share of it.
std::string limit_line(const char* what, const BrokerRun& run, const std::vector<BrokerRun>& runs) {
    const auto limit = median_limit(runs);
    if (!limit || *limit <= 0) return {};
    std::string each;
    for (const auto& r : runs)
        each += (each.empty() ? "" : ", ") + strf("%.0f", r.limit_rows_per_s);
    return strf(
        "  %s limit (the driver alone publishing as the target does, same window): %.0f "
        "msgs/s (runs %s); target / limit: %.3f\n",
        what, *limit, each.c_str(), run.rows_per_s() / *limit);
}

// The keys `prefix`_rows_per_s, _runs, _complete, _stored, _ratio_to_ws, _limit_rows_per_s,
// _limit_runs, _ratio_to_limit of one broker.
void add_broker_json(const std::string& prefix, const std::vector<BrokerRun>& runs,
                     const E2eResult* ws, nlohmann::json& out) {
    out[prefix + "_rows_per_s"] = nullptr;
    out[prefix + "_ratio_to_ws"] = nullptr;
    out[prefix + "_limit_rows_per_s"] = nullptr;
    out[prefix + "_ratio_to_limit"] = nullptr;
    const auto* median = median_run(runs);
    if (!median) return;
    out[prefix + "_rows_per_s"] = json_rate(median->rows_per_s());
    bool complete = true;
    for (const auto& run : runs) {
        out[prefix + "_runs"].push_back(json_rate(run.rows_per_s()));
        out[prefix + "_stored"].push_back(run.stored);
        out[prefix + "_limit_runs"].push_back(json_rate(run.limit_rows_per_s));
        complete = complete && run.drain.complete;
    }
    out[prefix + "_complete"] = complete;
    out[prefix + "_node_cpu_s_per_10k"] =
        json_fine(per_10k(median->drain.node_cpu_s, median->drain.rows));
    out[prefix + "_broker_cpu_s_per_10k"] =
        json_fine(per_10k(median->drain.worker_cpu_s, median->drain.rows));
    if (ws && ws->rows_per_s() > 0) {
        out[prefix + "_ratio_to_ws"] = json_fine(median->rows_per_s() / ws->rows_per_s());
    }
    if (const auto limit = median_limit(runs); limit && *limit > 0) {
        out[prefix + "_limit_rows_per_s"] = json_rate(*limit);
        out[prefix + "_ratio_to_limit"] = json_fine(median->rows_per_s() / *limit);
    }
}

}  // namespace

void BrokerScenario::repeat(const Turn& turn) {
    const auto& settings = turn.settings();
    const LoopbackContext loopback{turn.context};
    const auto& context = loopback.context;
    // The same rows over WebSocket, then to each broker: the ratios' sides, same repetition.
    const auto ws_tag = "e2e_1n_broker_volume" + turn.suffix();
    ws_runs_.push_back(run_e2e(turn.context, 1, ws_tag, settings.broker_rows));
    spdlog::info("{}: {:.0f} rows/s", ws_tag, ws_runs_.back().rows_per_s());

    const auto nats_tag = "nats" + turn.suffix();
    {
        const NatsProcess nats{broker_dir(settings, nats_tag + "-server")};
        broker_admin::create_stream(nats.url(), kStream, {kStreamSubjects});
        // The broker's own limit first, then purged: the stream holds only the drain's.
        const double limit_rate =
            rate(settings.broker_rows,
                 broker_admin::nats_publish_acked(nats.url(), kSubject, settings.broker_rows, kBody,
                                                  settings.broker_max_in_flight));
        broker_admin::purge_stream(nats.url(), kStream);
        spdlog::info("{}: limit {:.0f} msgs/s", nats_tag, limit_rate);
        BrokerRun run{
            drain_to_broker(context, nats_tag, nats.pid(), nats_target(settings, nats.url()))};
        run.stored = broker_admin::stream_messages(nats.url(), kStream);
        run.limit_rows_per_s = limit_rate;
        nats_runs_.push_back(run);
    }
    spdlog::info("{}: {:.0f} rows/s, {} messages in the stream", nats_tag,
                 nats_runs_.back().rows_per_s(), nats_runs_.back().stored);

    const auto amqp_tag = "amqp" + turn.suffix();
    {
        const RabbitMqProcess rabbit{broker_dir(settings, amqp_tag + "-server")};
        broker_admin::declare_exchange(rabbit.url(), kExchange, "topic");
        broker_admin::declare_queue_bound(rabbit.url(), kQueue, kExchange, "#");
        const double limit_rate = rate(
            settings.broker_rows, broker_admin::amqp_publish_confirmed(
                                      rabbit.url(), kExchange, kRoutingKey, settings.broker_rows,
                                      kBody, settings.broker_max_in_flight));
        const auto purged = broker_admin::purge_queue(rabbit.url(), kQueue);
        if (std::cmp_not_equal(purged, settings.broker_rows)) {
            spdlog::warn("{}: the limit run left {} messages in the queue, not {}", amqp_tag,
                         purged, settings.broker_rows);
        }
        spdlog::info("{}: limit {:.0f} msgs/s", amqp_tag, limit_rate);
        BrokerRun run{
            drain_to_broker(context, amqp_tag, rabbit.pid(), amqp_target(settings, rabbit.url()))};
        run.stored = broker_admin::queue_messages(rabbit.url(), kQueue);
        run.limit_rows_per_s = limit_rate;
        amqp_runs_.push_back(run);
    }
    spdlog::info("{}: {:.0f} rows/s, {} messages in the queue", amqp_tag,
                 amqp_runs_.back().rows_per_s(), amqp_runs_.back().stored);
}

void BrokerScenario::once(const Turn& turn) { nats_latency_ = run_nats_latency(turn.context); }

void BrokerScenario::render_table(const BenchSettings& settings,
                                  const ScenarioRegistry& /*registry*/, ReportTable& table) const {
    const auto* nats = median_run(nats_runs_);
    const auto* amqp = median_run(amqp_runs_);
    if (!nats && !amqp && !nats_latency_) return;
    std::string out = "\nBroker targets (1 node -> a broker target, max_in_flight " +
                      std::to_string(settings.broker_max_in_flight) + ")\n";
    const auto* ws = median_run(ws_runs_);
    if (ws) {
        out += strf("  %lld rows over WebSocket: %.0f rows/s (runs %s)\n",
                    static_cast<long long>(settings.broker_rows), ws->rows_per_s(),
                    rates_of(ws_runs_).c_str());
    }
    if (nats) {
        out += broker_line("a NATS JetStream stream (file storage)", settings.broker_rows, *nats,
                           nats_runs_);
        out += ratio_line("NATS", nats, ws);
        out += limit_line("NATS", *nats, nats_runs_);
    }
    if (amqp) {
        out += broker_line("a RabbitMQ exchange (durable queue, persistent, confirms)",
                           settings.broker_rows, *amqp, amqp_runs_);
        out += ratio_line("AMQP", amqp, ws);
        out += limit_line("AMQP", *amqp, amqp_runs_);
    }
    if (nats_latency_) {
        const auto& l = *nats_latency_;
        out += strf(
            "  NATS latency at %.0f rows/s (COMMIT returned -> message received by a core "
            "subscriber in the driver): p50 %.2f ms (target <= %.0f: %s), p90 %.2f, p99 %.2f ms "
            "(target <= %.0f: %s), max %.2f; %lld of %lld rows, not received %lld\n",
            l.achieved_rate, l.p50_ms, kTargetP50Ms, verdict(l.p50_ms <= kTargetP50Ms).c_str(),
            l.p90_ms, l.p99_ms, kTargetP99Ms, verdict(l.p99_ms <= kTargetP99Ms).c_str(), l.max_ms,
            static_cast<long long>(l.rows), static_cast<long long>(l.planned),
            static_cast<long long>(l.missing));
    }
    table.put(std::string{kName}, out);
}

void BrokerScenario::add_json(const ScenarioRegistry& /*registry*/, nlohmann::json& out) const {
    const auto* ws = median_run(ws_runs_);
    if (ws) out["brokers_ws_rows_per_s"] = json_rate(ws->rows_per_s());
    add_broker_json("nats", nats_runs_, ws, out);
    add_broker_json("amqp", amqp_runs_, ws, out);
    out["nats_latency_p50_ms"] = nullptr;
    out["nats_latency_p99_ms"] = nullptr;
    if (nats_latency_) {
        const auto& l = *nats_latency_;
        out["nats_latency_p50_ms"] = json_fine(l.p50_ms);
        out["nats_latency_p90_ms"] = json_fine(l.p90_ms);
        out["nats_latency_p99_ms"] = json_fine(l.p99_ms);
        out["nats_latency_max_ms"] = json_fine(l.max_ms);
        out["nats_latency_missing"] = l.missing;
        out["nats_latency_rate_achieved"] = json_rate(l.achieved_rate);
    }
}

double BrokerScenario::max_foreign_cpu() const {
    double most = 0;
    for (const auto& run : ws_runs_) most = std::max(most, run.foreign_cpu);
    for (const auto* runs : {&nats_runs_, &amqp_runs_}) {
        for (const auto& run : *runs) most = std::max(most, run.drain.foreign_cpu);
    }
    return most;
}

}  // namespace outboxd::bench
