#include "controls_runs.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <stdexcept>
#include <thread>
#include <vector>

#include <pqxx/pqxx>
#include <spdlog/spdlog.h>

#include "e2e_drain.hpp"
#include "http_client.hpp"
#include "outboxd/sdk/worker_client.hpp"
#include "percentile.hpp"
#include "wait_for.hpp"

namespace outboxd::bench {
namespace {

using Clock = std::chrono::steady_clock;

constexpr int kOrderedRowsPerWorkflow = 10;
constexpr double kRate = 200;
constexpr int kBurst = 20;
constexpr int kRateNodes = 3;
constexpr int kLimit = 8;
constexpr int kLimitNodes = 3;
constexpr int kPriority = 50;
constexpr std::chrono::milliseconds kPriorityEvery{50};  // 20 rows a second
constexpr int kPriorityWorkerCredit = 512;
constexpr std::chrono::seconds kDrainTimeout{10};
constexpr std::chrono::milliseconds kPoll{20};

std::int64_t now_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch())
        .count();
}

// PUT /v1/namespaces/{ns} on one node; then long enough for every node's cache to have it.
void configure(const BenchSettings& settings, const std::string& http_url, const std::string& ns,
               const std::string& body) {
    const auto reply = http_request(http_url, "PUT", "/v1/namespaces/" + ns, body);
    if (reply.status < 200 || reply.status >= 300) {
        throw std::runtime_error{"PUT /v1/namespaces/" + ns + " " + body + ": " +
                                 std::to_string(reply.status) + " " + reply.body};
    }
    std::this_thread::sleep_for(settings_ttl(settings) + kSettingsMargin);
}

// `workflows` × `rows` rows staged ordinal-major (every workflow's row 0, then every row 1,
// ...), drained by 1 node, ordered or not.
E2eResult drain_workflows(const BenchContext& context, const std::string& tag,
                          std::int64_t workflows, std::int64_t rows, bool ordered) {
    const auto database = "bench_" + tag;
    const auto url = context.databases.create_migrated(database);
    {
        pqxx::connection conn{url};
        pqxx::work tx{conn};
        tx.exec(
            "INSERT INTO outbox (workflow_id, ordinal, activity_type)"
            " SELECT 'wf-' || w, r, 'noop' FROM generate_series(0, " +
            std::to_string(rows - 1) + ") r, generate_series(1, " + std::to_string(workflows) +
            ") w ORDER BY r, w");
        tx.commit();
    }
    settle(url);
    DrainOptions options;
    options.with_nodes = [&](NodeFleet& fleet) {
        if (ordered) {
            configure(context.settings, fleet.http_urls().front(), "default",
                      R"({"ordering":"workflow"})");
            const auto got =
                http_request(fleet.http_urls().front(), "GET", "/v1/namespaces/default");
            if (got.body.find(R"("ordering":"workflow")") == std::string::npos) {
                throw std::runtime_error{"ordered: the node did not take the ordering: " +
                                         got.body};
            }
        }
    };
    auto result = drain_e2e(context, url, 1, tag, options);
    if (ordered) {
        // The rows that waited behind their predecessor: let go, they became due when their
        // predecessor ended, after they were staged.
        pqxx::connection conn{url};
        pqxx::nontransaction tx{conn};
        const auto waited = tx.exec1(
                                  "SELECT count(*) FROM outbox WHERE visible_after >"
                                  " created_at + interval '1 millisecond'")[0]
                                .as<std::int64_t>();
        spdlog::info("{}: {} rows waited for their predecessor", tag, waited);
    }
    spdlog::info(
        "{}: {} rows in {:.1f} s, {} claim rounds ({:.1f} s), CPU s: node {:.1f}, "
        "PostgreSQL {:.1f}, workers {:.1f}",
        tag, result.rows, result.seconds, result.claim_rounds, result.claim_seconds,
        result.node_cpu_s, result.pg_cpu_s, result.worker_cpu_s);
    context.databases.drop(database);
    return result;
}

OrderedResult run_ordered(const BenchContext& context) {
    const auto& s = context.settings;
    OrderedResult result;
    result.rows = s.ordered_workflows * kOrderedRowsPerWorkflow;
    const auto unordered =
        drain_workflows(context, "unordered", s.ordered_workflows, kOrderedRowsPerWorkflow, false);
    const auto ordered =
        drain_workflows(context, "ordered", s.ordered_workflows, kOrderedRowsPerWorkflow, true);
    result.unordered_rows_per_s = unordered.rows_per_s();
    result.ordered_rows_per_s = ordered.rows_per_s();
    result.ratio = unordered.rows_per_s() > 0 ? ordered.rows_per_s() / unordered.rows_per_s() : 0.0;
    spdlog::info(
        "ordered: {} workflows x {}: unordered {:.0f} rows/s, ordered {:.0f} rows/s: "
        "ratio {:.3f}",
        s.ordered_workflows, kOrderedRowsPerWorkflow, result.unordered_rows_per_s,
        result.ordered_rows_per_s, result.ratio);
    result.serial_rows = s.serial_rows;
    const auto serial = drain_workflows(context, "ordered_serial", 1, s.serial_rows, true);
    result.serial_rows_per_s = serial.rows_per_s();
    result.complete = unordered.complete && ordered.complete && serial.complete;
    spdlog::info("ordered_serial: 1 workflow x {}: {:.0f} rows/s", s.serial_rows,
                 result.serial_rows_per_s);
    return result;
}

RateLimitResult run_rate_limit(const BenchContext& context) {
    const auto& s = context.settings;
    RateLimitResult result;
    result.nodes = kRateNodes;
    result.per_second = kRate;
    result.burst = kBurst;
    const std::string database = "bench_rate_limit";
    const auto url = context.databases.create_migrated(database);
    // More than the span can take, so that the backlog lasts.
    const auto backlog = static_cast<std::int64_t>(kRate * (s.rate_seconds + 5)) + 1000;
    stage_routed_rows(url, backlog, "rate-", {"rated"}, {"default"});
    settle(url);
    const auto fleet_settings = context.fleet(url);
    NodeFleet fleet{fleet_settings, kRateNodes, "rate_limit"};
    configure(s, fleet.http_urls().front(), "rated",
              R"({"rate_limit":{"per_second":200,"burst":20}})");
    WorkerFleet workers{
        fleet_settings,
        {WorkerGroup{"worker", s.worker_processes, {"rated"}, "default", s.worker_max_in_flight}},
        fleet.worker_urls().front(),
        "rate_limit"};
    spdlog::info("rate_limit: {} nodes, {}/s burst {}: draining for {:.0f} s", kRateNodes, kRate,
                 kBurst, s.rate_seconds + 1);
    const auto rounds_before = fleet.claim_rounds();
    std::this_thread::sleep_for(std::chrono::duration<double>(s.rate_seconds + 1.5));
    fleet.check_alive();
    workers.check_alive();
    const auto rounds = fleet.claim_rounds().rounds - rounds_before.rounds;
    workers.stop();
    fleet.stop();

    std::vector<double> at;  // finish instants, seconds from the first
    {
        pqxx::connection conn{url};
        pqxx::nontransaction tx{conn};
        for (const auto& r : tx.exec("SELECT extract(epoch FROM finished_at - min(finished_at)"
                                     " OVER ())::float8 FROM outbox WHERE status = 'done'"
                                     " ORDER BY finished_at")) {
            at.push_back(r[0].as<double>());
        }
    }
    context.databases.drop(database);
    if (at.size() < static_cast<std::size_t>(kBurst) + 10) {
        throw std::runtime_error{"rate_limit: only " + std::to_string(at.size()) + " rows done"};
    }
    // The span: from half a second in (the burst is spent by then) for rate_seconds.
    const auto in = [&](double from, double to) {
        return static_cast<double>(std::lower_bound(at.begin(), at.end(), to) -
                                   std::lower_bound(at.begin(), at.end(), from));
    };
    const double from = 0.5;
    const double to = from + s.rate_seconds;
    result.seconds = s.rate_seconds;
    result.dispatches = static_cast<std::int64_t>(in(from, to));
    result.achieved = static_cast<double>(result.dispatches) / result.seconds;
    const double middle = (from + to) / 2;
    for (const auto& [a, b] :
         {std::pair{from, to}, std::pair{from, middle}, std::pair{middle, to}}) {
        result.err = std::max(result.err, std::abs(in(a, b) / (b - a) - kRate) / kRate);
    }
    for (std::size_t i = 0; i < at.size(); ++i) {
        const auto n = in(at[i], at[i] + 1.0);
        result.window_max_ratio = std::max(result.window_max_ratio, n / (kRate + kBurst));
    }
    spdlog::info(
        "rate_limit: {} dispatches in {:.1f} s: {:.1f}/s, worst relative error {:.3f}; busiest "
        "1 s window {:.3f} of rate + burst; {} claim rounds",
        result.dispatches, result.seconds, result.achieved, result.err, result.window_max_ratio,
        rounds);
    return result;
}

PriorityResult run_priority(const BenchContext& context) {
    const auto& s = context.settings;
    PriorityResult result;
    result.backlog = s.priority_backlog;
    const std::string database = "bench_priority";
    const auto url = context.databases.create_migrated(database);
    spdlog::info("priority: staging {} rows of priority 0", s.priority_backlog);
    stage_pending_rows(url, s.priority_backlog, "bulk-");
    settle(url);
    const auto fleet_settings = context.fleet(url);
    NodeFleet fleet{fleet_settings, 1, "priority"};

    const auto rows = static_cast<std::size_t>(s.priority_rows);
    std::vector<std::atomic<std::int64_t>> committed(rows);
    std::vector<std::atomic<std::int64_t>> received(rows);
    std::atomic<std::int64_t> received_count{0};
    static constexpr std::string_view kPrefix = "prio-";
    sdk::WorkerOptions options;
    options.seed_urls = fleet.worker_urls();
    options.worker_id = "bench-priority-worker";
    options.activity_types = {"noop"};
    // A priority row waits behind what its worker holds already (credit ÷ the worker's
    // rate): with the e2e runs' 2 × 1,024 it was p50 40 / p99 75 ms at ~35k rows/s, with 512
    // p50 19 / p99 39 ms (docs/benchmarks.md).
    options.max_in_flight = kPriorityWorkerCredit;
    sdk::WorkerClient client{
        options, [&](const worker::protocol::Task& task, sdk::Responder responder) {
            const auto at = now_ns();
            if (task.dispatch_key.rfind(kPrefix, 0) == 0) {
                const auto row = std::stoull(task.dispatch_key.substr(kPrefix.size()));
                std::int64_t unset = 0;
                if (row < received.size() && received[row].compare_exchange_strong(unset, at)) {
                    ++received_count;
                }
            }
            responder.complete();
        }};
    client.start();
    wait_for(
        "controls", "the backlog did not start draining", [&] { return fleet.rows_done() > 0; },
        [&] { fleet.check_alive(); });

    pqxx::connection conn{url};
    conn.prepare("stage",
                 "INSERT INTO outbox (dispatch_key, workflow_id, ordinal, activity_type, priority)"
                 " VALUES ($1, $2, 0, 'noop', $3)");
    const auto start = Clock::now();
    for (std::size_t row = 0; row < rows; ++row) {
        std::this_thread::sleep_until(start + row * kPriorityEvery);
        {
            pqxx::work tx{conn};
            tx.exec_prepared("stage", std::string{kPrefix} + std::to_string(row),
                             "prio-wf-" + std::to_string(row), kPriority);
            tx.commit();
        }
        committed[row] = now_ns();
        fleet.check_alive();
    }
    result.rows = static_cast<std::int64_t>(rows);
    result.backlog_left = s.priority_backlog - (fleet.rows_done() - received_count.load());
    const auto deadline = Clock::now() + kDrainTimeout;
    while (received_count.load() < result.rows && Clock::now() < deadline) {
        std::this_thread::sleep_for(kPoll);
    }
    std::vector<double> latencies;
    for (std::size_t row = 0; row < rows; ++row) {
        const auto arrival = received[row].load();
        if (arrival == 0) {
            ++result.missing;
            continue;
        }
        latencies.push_back(static_cast<double>(arrival - committed[row].load()) / 1e6);
    }
    std::sort(latencies.begin(), latencies.end());
    result.p50_ms = percentile(latencies, 50);
    result.p99_ms = percentile(latencies, 99);
    result.max_ms = latencies.empty() ? 0 : latencies.back();
    spdlog::info(
        "priority: {} rows of priority {} behind {} (still {} to do at the last): p50 {:.2f} ms, "
        "p99 {:.2f} ms, max {:.2f} ms, {} missing",
        result.rows, kPriority, result.backlog, result.backlog_left, result.p50_ms, result.p99_ms,
        result.max_ms, result.missing);
    client.stop(std::chrono::milliseconds{1000});
    fleet.stop();
    context.databases.drop(database);
    return result;
}

ConcurrencyResult run_concurrency(const BenchContext& context) {
    const auto& s = context.settings;
    ConcurrencyResult result;
    result.nodes = kLimitNodes;
    result.limit = kLimit;
    result.rows = s.limit_rows;
    const std::string database = "bench_concurrency";
    const auto url = context.databases.create_migrated(database);
    stage_routed_rows(url, s.limit_rows, "limited-", {"limited"}, {"default"});
    settle(url);
    const auto fleet_settings = context.fleet(url);
    NodeFleet fleet{fleet_settings, kLimitNodes, "concurrency"};
    configure(s, fleet.http_urls().front(), "limited",
              R"({"activities":{"noop":{"max_in_flight":)" + std::to_string(kLimit) + "}}}");

    std::atomic<bool> stop{false};
    std::atomic<std::int64_t> max_seen{0};
    std::atomic<std::int64_t> samples{0};
    std::thread checker([&] {
        pqxx::connection conn{url};
        while (!stop) {
            pqxx::nontransaction tx{conn};
            const auto n = tx.exec1(
                                 "SELECT count(*) FROM outbox WHERE status = 'claimed'"
                                 " AND namespace = 'limited' AND activity_type = 'noop'")[0]
                               .as<std::int64_t>();
            max_seen = std::max(max_seen.load(), n);
            ++samples;
        }
    });
    const auto start = Clock::now();
    WorkerFleet workers{
        fleet_settings,
        {WorkerGroup{"worker", s.worker_processes, {"limited"}, "default", s.worker_max_in_flight}},
        fleet.worker_urls().front(),
        "concurrency"};
    const auto deadline = start + std::chrono::duration_cast<Clock::duration>(
                                      std::chrono::duration<double>(s.e2e_max_seconds));
    while (fleet.rows_done() < s.limit_rows && Clock::now() < deadline) {
        fleet.check_alive();
        workers.check_alive();
        std::this_thread::sleep_for(kPoll);
    }
    const auto done = fleet.rows_done();
    const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    stop = true;
    checker.join();
    workers.stop();
    fleet.stop();
    context.databases.drop(database);
    result.max_seen = max_seen.load();
    result.samples = samples.load();
    result.rows_per_s = static_cast<double>(done) / seconds;
    spdlog::info(
        "concurrency: limit {} over {} nodes: highest claimed count seen {} ({} samples), "
        "{} of {} rows at {:.0f} rows/s",
        kLimit, kLimitNodes, result.max_seen, result.samples, done, s.limit_rows,
        result.rows_per_s);
    return result;
}

}  // namespace

ControlsResult run_controls(const BenchContext& context) {
    ControlsResult result;
    result.ordered = run_ordered(context);
    result.rate = run_rate_limit(context);
    result.priority = run_priority(context);
    result.concurrency = run_concurrency(context);
    return result;
}

}  // namespace outboxd::bench
