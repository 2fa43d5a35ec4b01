#include "latency_probe.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <pqxx/pqxx>
#include <spdlog/spdlog.h>

#include "node_fleet.hpp"
#include "percentile.hpp"

namespace outboxd::bench {
namespace {

using Clock = std::chrono::steady_clock;

constexpr const char* kKeyPrefix = "lat-";
constexpr std::chrono::seconds kDrainTimeout{10};

std::int64_t now_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch())
        .count();
}

// Timestamps by row index; 0 = not yet. Written by the stagers and the SDK thread.
struct Timeline {
    explicit Timeline(std::size_t rows) : committed(rows), received(rows) {}
    std::vector<std::atomic<std::int64_t>> committed;
    std::vector<std::atomic<std::int64_t>> received;
};

void run_stager(const std::string& url, int index, int stagers, std::size_t rows, double rate,
                Clock::time_point start, Clock::time_point stop, Timeline& timeline,
                std::exception_ptr& error, std::mutex& error_mutex) {
    try {
        pqxx::connection conn{url};
        conn.prepare("stage",
                     "INSERT INTO outbox (dispatch_key, workflow_id, ordinal, activity_type)"
                     " VALUES ($1, $2, 0, 'noop')");
        for (std::size_t row = static_cast<std::size_t>(index); row < rows;
             row += static_cast<std::size_t>(stagers)) {
            std::this_thread::sleep_until(
                start + std::chrono::duration_cast<Clock::duration>(
                            std::chrono::duration<double>(static_cast<double>(row) / rate)));
            if (Clock::now() > stop) return;  // behind schedule past the cap: leave the rest
            const auto key = kKeyPrefix + std::to_string(row);
            pqxx::work tx{conn};
            tx.exec_prepared("stage", key, "lat-wf-" + std::to_string(row));
            tx.commit();
            timeline.committed[row] = now_ns();
        }
    } catch (...) {
        const std::lock_guard lock{error_mutex};
        if (!error) error = std::current_exception();
    }
}

}  // namespace

LatencyResult measure_latency(const BenchContext& context, const std::string& tag,
                              const LatencyReceiver& receiver) {
    const auto& settings = context.settings;
    const std::string database = "bench_" + tag;
    const auto url = context.databases.create_migrated(database);
    settle(url);
    NodeFleet fleet{context.fleet(url), 1, tag};

    const auto warmup_rows =
        static_cast<std::size_t>(settings.latency_rate * settings.latency_warmup_seconds);
    const auto rows =
        warmup_rows + static_cast<std::size_t>(settings.latency_rate * settings.latency_seconds);
    Timeline timeline{rows};
    const auto arrived = [&timeline, rows](std::string_view dispatch_key) {
        const auto at = now_ns();
        if (dispatch_key.substr(0, std::string_view{kKeyPrefix}.size()) != kKeyPrefix) return;
        const auto row =
            std::stoull(std::string{dispatch_key.substr(std::string_view{kKeyPrefix}.size())});
        if (row < rows) {
            std::int64_t unset = 0;
            timeline.received[row].compare_exchange_strong(unset, at);  // first delivery
        }
    };
    const auto stop_receiver = receiver(fleet, arrived);
    spdlog::info("{}: node up, receiver ready; staging {} rows at {}/s ({} s warm-up)", tag, rows,
                 settings.latency_rate, settings.latency_warmup_seconds);

    const auto node_before = fleet.cpu_seconds();
    const auto start = Clock::now() + std::chrono::milliseconds{100};
    // Commits slower than the schedule (a global lock, a slow disk) make the open loop fall
    // behind; past twice the planned time the stagers stop and the rows not staged are
    // left out (reported as a lower achieved rate).
    const auto planned = static_cast<double>(rows) / settings.latency_rate;
    const auto stop = start + std::chrono::duration_cast<Clock::duration>(
                                  std::chrono::duration<double>(2 * planned + 2));
    std::exception_ptr error;
    std::mutex error_mutex;
    std::vector<std::thread> stagers;
    for (int i = 0; i < settings.latency_stagers; ++i) {
        stagers.emplace_back(run_stager, url, i, settings.latency_stagers, rows,
                             settings.latency_rate, start, stop, std::ref(timeline),
                             std::ref(error), std::ref(error_mutex));
    }
    for (auto& stager : stagers) stager.join();
    if (error) std::rethrow_exception(error);
    const auto drain_deadline = Clock::now() + kDrainTimeout;
    const auto all_received = [&] {
        for (std::size_t row = warmup_rows; row < rows; ++row) {
            if (timeline.committed[row].load() != 0 && timeline.received[row].load() == 0) {
                return false;
            }
        }
        return true;
    };
    while (!all_received() && Clock::now() < drain_deadline) {
        std::this_thread::sleep_for(std::chrono::milliseconds{20});
    }
    const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
    const double node_cpu = fleet.cpu_seconds() - node_before;

    LatencyResult result;
    std::vector<double> latencies;
    std::int64_t first_commit = 0, last_commit = 0;
    for (std::size_t row = warmup_rows; row < rows; ++row) {
        const auto committed = timeline.committed[row].load();
        const auto received = timeline.received[row].load();
        if (committed == 0) continue;  // not staged before the cap
        ++result.rows;
        if (first_commit == 0) first_commit = committed;
        last_commit = std::max(last_commit, committed);
        if (received == 0) {
            ++result.missing;
            continue;
        }
        latencies.push_back(static_cast<double>(received - committed) / 1e6);
    }
    std::sort(latencies.begin(), latencies.end());
    result.planned = static_cast<std::int64_t>(rows - warmup_rows);
    const double commit_span = static_cast<double>(last_commit - first_commit) / 1e9;
    result.achieved_rate = commit_span > 0 ? (result.rows - 1) / commit_span : 0;
    result.p50_ms = percentile(latencies, 50);
    result.p90_ms = percentile(latencies, 90);
    result.p99_ms = percentile(latencies, 99);
    result.max_ms = latencies.empty() ? 0 : latencies.back();
    result.node_cpu_share = elapsed > 0 ? node_cpu / elapsed : 0;

    stop_receiver();
    fleet.stop();
    context.databases.drop(database);
    return result;
}

}  // namespace outboxd::bench
