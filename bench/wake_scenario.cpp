#include "wake_scenario.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <exception>
#include <latch>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <pqxx/pqxx>
#include <spdlog/spdlog.h>

#include "report_format.hpp"

namespace outboxd::bench {
namespace {

using Clock = std::chrono::steady_clock;

// Target of issue 7.
constexpr double kTargetWakeCost = 0.10;

class CountingReceiver final : public pqxx::notification_receiver {
public:
    CountingReceiver(pqxx::connection_base& conn, std::atomic<std::int64_t>& count)
        : pqxx::notification_receiver(conn, "outbox_wake"), count_(count) {}
    void operator()(const std::string&, int) override { ++count_; }

private:
    std::atomic<std::int64_t>& count_;
};

// Runs one phase; returns rows/s over all writers.
double run_phase(const std::string& url, int writers, double seconds, const std::string& tag) {
    std::atomic<std::int64_t> rows{0};
    std::latch ready{writers};
    std::atomic<bool> go{false};
    std::exception_ptr error;
    std::mutex error_mutex;
    Clock::time_point deadline;
    std::vector<std::thread> threads;
    for (int w = 0; w < writers; ++w) {
        threads.emplace_back([&, w] {
            bool counted = false;
            try {
                pqxx::connection conn{url};
                conn.prepare(
                    "insert",
                    "INSERT INTO outbox (dispatch_key, workflow_id, ordinal, activity_type)"
                    " VALUES ($1, $1, 0, 'noop')");
                const auto prefix = tag + "-" + std::to_string(w) + "-";
                ready.count_down();
                counted = true;
                while (!go.load()) std::this_thread::yield();
                std::int64_t mine = 0;
                while (Clock::now() < deadline) {
                    pqxx::work tx{conn};
                    tx.exec_prepared("insert", prefix + std::to_string(mine));
                    tx.commit();
                    ++mine;
                }
                rows += mine;
            } catch (...) {
                if (!counted) ready.count_down();
                const std::lock_guard lock{error_mutex};
                if (!error) error = std::current_exception();
                go = true;
            }
        });
    }
    ready.wait();
    const auto start = Clock::now();
    deadline =
        start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
    go = true;  // publishes deadline
    for (auto& thread : threads) thread.join();
    if (error) std::rethrow_exception(error);
    return static_cast<double>(rows.load()) / seconds;
}

}  // namespace

double WakeResult::cost() const {
    if (round_ratios.empty()) return 0.0;
    auto ratios = round_ratios;
    std::sort(ratios.begin(), ratios.end());
    const auto middle = ratios.size() / 2;
    const double median =
        ratios.size() % 2 == 1 ? ratios[middle] : (ratios[middle - 1] + ratios[middle]) / 2;
    return 1.0 - median;
}

namespace {

WakeResult run_wake_cost(const BenchContext& context) {
    const auto& settings = context.settings;
    const std::string database = "bench_wake";
    const auto url = context.databases.create_migrated(database);

    std::atomic<std::int64_t> notifications{0};
    std::atomic<bool> stop_listening{false};
    std::exception_ptr listener_error;
    std::thread listener{[&] {
        try {
            pqxx::connection conn{url};
            CountingReceiver receiver{conn, notifications};
            while (!stop_listening) conn.await_notification(0, 100'000);
        } catch (...) {
            listener_error = std::current_exception();
        }
    }};

    WakeResult result;
    int off_phases = 0, on_phases = 0;
    std::int64_t on_notifications = 0;
    try {
        pqxx::connection admin{url};
        for (int round = 0; round < settings.wake_rounds; ++round) {
            // ABBA: off, on, on, off, off, on, …
            double round_on = 0, round_off = 0;
            for (const bool enabled : {round % 2 == 0 ? false : true, round % 2 == 0}) {
                {
                    pqxx::nontransaction tx{admin};
                    tx.exec("TRUNCATE outbox");
                    tx.exec(std::string{"ALTER TABLE outbox "} + (enabled ? "ENABLE" : "DISABLE") +
                            " TRIGGER outbox_notify_wake");
                    tx.exec("CHECKPOINT");
                }
                const auto before = notifications.load();
                const auto tag = "wake" + std::to_string(round) + (enabled ? "on" : "off");
                const double rate =
                    run_phase(url, settings.wake_writers, settings.wake_seconds, tag);
                spdlog::info("wake: trigger {}: {:.0f} rows/s ({} writers)",
                             enabled ? "on " : "off", rate, settings.wake_writers);
                if (enabled) {
                    result.rows_per_s_on += rate;
                    round_on = rate;
                    ++on_phases;
                    on_notifications += notifications.load() - before;
                } else {
                    result.rows_per_s_off += rate;
                    round_off = rate;
                    ++off_phases;
                }
            }
            if (round_off > 0) result.round_ratios.push_back(round_on / round_off);
        }
    } catch (...) {
        stop_listening = true;
        listener.join();
        throw;
    }
    stop_listening = true;
    listener.join();
    if (listener_error) std::rethrow_exception(listener_error);
    result.rows_per_s_off /= std::max(off_phases, 1);
    result.rows_per_s_on /= std::max(on_phases, 1);
    result.notifications = on_notifications;
    context.databases.drop(database);
    return result;
}

}  // namespace

void WakeScenario::once(const Turn& turn) { result_ = run_wake_cost(turn.context); }

void WakeScenario::render_table(const BenchSettings& settings, const ScenarioRegistry& /*registry*/,
                                ReportTable& table) const {
    if (!result_) return;
    const auto& w = *result_;
    std::string ratios;
    for (const double ratio : w.round_ratios) ratios += strf(" %.2f", ratio);
    table.put(std::string{kName},
              strf("\nApplication insert cost of the wake trigger (%d writers, single-row "
                   "transactions, %d rounds of off + on, %.1f s each, ABBA)\n",
                   settings.wake_writers, settings.wake_rounds, settings.wake_seconds) +
                  strf("  trigger off %.0f rows/s   trigger on %.0f rows/s (means)   on/off per "
                       "round:%s\n",
                       w.rows_per_s_off, w.rows_per_s_on, ratios.c_str()) +
                  strf("  cost %.3f = 1 - median round ratio (target <= %.2f: %s)\n", w.cost(),
                       kTargetWakeCost, verdict(w.cost() <= kTargetWakeCost).c_str()));
}

void WakeScenario::add_json(const ScenarioRegistry& /*registry*/, nlohmann::json& out) const {
    out["app_insert_cost_of_wake"] = nullptr;
    if (!result_) return;
    const auto& w = *result_;
    out["app_insert_cost_of_wake"] = json_fine(w.cost());
    out["app_insert_rows_per_s_wake_off"] = json_rate(w.rows_per_s_off);
    out["app_insert_rows_per_s_wake_on"] = json_rate(w.rows_per_s_on);
    for (const double ratio : w.round_ratios) {
        out["app_insert_wake_round_ratios"].push_back(json_fine(ratio));
    }
}

}  // namespace outboxd::bench
