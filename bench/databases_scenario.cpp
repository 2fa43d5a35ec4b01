#include "databases_scenario.hpp"

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

#include <pqxx/pqxx>
#include <spdlog/spdlog.h>

#include "bench_database.hpp"
#include "e2e_drain.hpp"
#include "node_fleet.hpp"
#include "report_format.hpp"

namespace outboxd::bench {
namespace {

using Clock = std::chrono::steady_clock;
using Named = std::vector<std::pair<std::string, std::string>>;  // name, URL

constexpr int kIdleDatabases = 20;
constexpr std::chrono::milliseconds kSample{100};
constexpr double kMaxCatchUpSeconds = 120;

std::string databases_json(const Named& databases) {
    nlohmann::ordered_json object = nlohmann::ordered_json::object();
    for (const auto& [name, url] : databases) object[name] = url;
    return object.dump();
}

// The bench's settings with the nodes serving `databases`.
BenchSettings serving(const BenchSettings& settings, const Named& databases) {
    auto out = settings;
    out.node_env.emplace_back("OUTBOXD_DATABASES", databases_json(databases));
    return out;
}

double seconds_since(Clock::time_point start) {
    return std::chrono::duration<double>(Clock::now() - start).count();
}

double done_in(const NodeFleet& fleet, const std::string& database) {
    return fleet.metric_sum("outboxd_outcomes_total",
                            {"database=\"" + database + "\"", "outcome=\"done\""});
}

// The idle databases, made once from a migrated template and kept for every run.
const Named& idle_databases(const BenchContext& context, Named& made) {
    if (!made.empty()) return made;
    context.databases.create_migrated("bench_idle_template");
    for (int i = 1; i <= kIdleDatabases; ++i) {
        const auto name = strf("bench_idle_%02d", i);
        made.emplace_back(strf("idle%02d", i),
                          context.databases.create_copy(name, "bench_idle_template"));
    }
    return made;
}

double busy_run(const BenchContext& context, const Named& idle, const std::string& tag) {
    const auto& settings = context.settings;
    const auto database = "bench_" + tag;
    const auto url = context.databases.create_migrated(database);
    spdlog::info("{}: staging {} rows in the busy database, {} idle beside it", tag, settings.rows,
                 idle.size());
    stage_pending_rows(url, settings.rows, "dbs-");
    settle(url);
    Named served{{"busy", url}};
    served.insert(served.end(), idle.begin(), idle.end());
    const auto with = serving(settings, served);
    // Only the steady state is timed: every database up and its first upkeep done (the
    // start of 21 engines, their connections and first jobs, is not what a busy one pays).
    DrainOptions options;
    options.with_nodes = [&](NodeFleet& fleet) {
        const auto deadline = Clock::now() + NodeFleet::kStartTimeout;
        while (fleet.metric_sum("outboxd_database_up") < static_cast<double>(served.size()) &&
               Clock::now() < deadline) {
            std::this_thread::sleep_for(kSample);
        }
        std::this_thread::sleep_for(std::chrono::seconds{3});
    };
    const auto result = drain_e2e({with, context.databases, context.pg_cpu}, url, 1, tag, options);
    context.databases.drop(database);
    return result.complete ? result.rows_per_s() : 0.0;
}

// Three databases: two on the bench cluster, one on the second instance if there is one.
struct Three {
    Named databases;
    std::optional<BenchDatabases> second;
    std::vector<std::string> names;  // as created, to drop

    Three(const BenchContext& context, const std::string& tag) {
        const auto& settings = context.settings;
        if (!settings.second_database_url.empty()) second.emplace(settings.second_database_url);
        for (const char* name : {"a", "b", "c"}) {
            auto& cluster = (std::string_view{name} == "c" && second) ? *second : context.databases;
            const auto database = "bench_" + tag + "_" + name;
            databases.emplace_back(name, cluster.create_migrated(database));
            names.push_back(database);
        }
    }
    void drop(const BenchContext& context) {
        for (std::size_t i = 0; i < names.size(); ++i) {
            (i == 2 && second ? *second : context.databases).drop(names[i]);
        }
    }
};

double three_run(const BenchContext& context, const std::string& tag) {
    const auto& settings = context.settings;
    Three three{context, tag};
    const auto each = std::max<std::int64_t>(settings.rows / 3, 1);
    spdlog::info("{}: staging {} rows in each of 3 databases", tag, each);
    for (const auto& [name, url] : three.databases) {
        stage_pending_rows(url, each, "dbs-");
        settle(url);
    }
    const auto with = serving(settings, three.databases);
    const BenchContext bench{with, context.databases, context.pg_cpu};
    const auto fleet_settings = bench.fleet(three.databases.front().second);
    double rate = 0;
    {
        NodeFleet fleet{fleet_settings, 1, tag};
        const auto start = Clock::now();
        WorkerFleet workers{
            fleet_settings, {default_workers(settings)}, fleet.worker_urls().front(), tag};
        const auto total = 3 * each;
        while (fleet.rows_done() < total && seconds_since(start) < settings.e2e_max_seconds) {
            std::this_thread::sleep_for(kSample);
            fleet.check_alive();
            workers.check_alive();
        }
        rate = static_cast<double>(fleet.rows_done()) / seconds_since(start);
    }
    three.drop(context);
    return rate;
}

}  // namespace

void DatabasesScenario::repeat(const Turn& turn) {
    // Not yet in CI's smoke run: its 20 databases and the second instance's stop and start
    // are first to be proven in quick and full runs (docs/benchmarks.md, "Several databases").
    if (turn.settings().smoke) return;
    const auto& context = turn.context;
    const auto& idle_made = idle_databases(context, idle_);
    const bool idle_first = turn.repetition % 2 == 0;
    for (const bool with_idle : {idle_first, !idle_first}) {
        const auto tag = std::string{with_idle ? "dbs_beside_idle" : "dbs_alone"} + turn.suffix();
        const auto rate = busy_run(context, with_idle ? idle_made : Named{}, tag);
        (with_idle ? beside_idle_ : alone_).push_back(rate);
    }
    three_.push_back(three_run(context, "dbs_three" + turn.suffix()));
}

void DatabasesScenario::once(const Turn& turn) {
    if (turn.settings().smoke) return;  // as in repeat()
    const auto& context = turn.context;
    const auto& settings = context.settings;
    // What an idle database costs: 21 idle against 1, over the same seconds.
    {
        const auto& idle = idle_databases(context, idle_);
        const double window = settings.quick ? 4 : 10;
        std::vector<double> cpu;
        std::vector<double> pg_cpu;
        std::vector<double> transactions;
        for (const std::size_t count : {std::size_t{1}, idle.size()}) {
            const Named served(idle.begin(), idle.begin() + static_cast<std::ptrdiff_t>(count));
            const auto with = serving(settings, served);
            const BenchContext bench{with, context.databases, context.pg_cpu};
            NodeFleet fleet{bench.fleet(served.front().second), 1,
                            strf("dbs_idle_cost_%zu", count)};
            std::this_thread::sleep_for(std::chrono::seconds{2});  // every database joined
            pqxx::connection admin{settings.database_url};
            std::string names = "ARRAY[";
            for (std::size_t i = 0; i < count; ++i) {
                names += (i ? ",'" : "'") + strf("bench_idle_%02zu", i + 1) + "'";
            }
            names += "]::text[]";
            const auto xacts = [&] {
                pqxx::work tx{admin};
                return tx
                    .exec1(
                        "SELECT coalesce(sum(xact_commit + xact_rollback), 0)::float8 FROM "
                        "pg_stat_database WHERE datname = ANY(" +
                        names + ")")[0]
                    .as<double>();
            };
            const auto cpu_before = fleet.cpu_seconds();
            const auto pg_before = context.pg_cpu.sample();
            const auto xact_before = xacts();
            std::this_thread::sleep_for(std::chrono::duration<double>(window));
            cpu.push_back(fleet.cpu_seconds() - cpu_before);
            pg_cpu.push_back(context.pg_cpu.sample() - pg_before);
            transactions.push_back(xacts() - xact_before);
        }
        const auto extra = static_cast<double>(idle.size() - 1);
        idle_cost_ = IdleCost{1000 * (cpu[1] - cpu[0]) / extra / window,
                              (transactions[1] - transactions[0]) / extra / window,
                              1000 * (pg_cpu[1] - pg_cpu[0]) / extra / window, window};
        for (int i = 1; i <= kIdleDatabases; ++i) {
            context.databases.drop(strf("bench_idle_%02d", i));
        }
        context.databases.drop("bench_idle_template");
        idle_.clear();
    }
    if (settings.second_pg_data_dir.empty()) {
        spdlog::info("databases: no --second-pg-data: the outage run is skipped");
        return;
    }
    // An instance down: the rate of the two healthy databases before and while it is.
    const auto tag = std::string{"dbs_outage"};
    Three three{context, tag};
    // Enough that the healthy two still have rows when the outage ends, at ~25k rows/s.
    const auto each = settings.quick ? std::int64_t{250'000} : std::int64_t{600'000};
    for (const auto& [name, url] : three.databases) {
        stage_pending_rows(url, each, "dbs-");
        settle(url);
    }
    const auto with = serving(settings, three.databases);
    const BenchContext bench{with, context.databases, context.pg_cpu};
    const auto fleet_settings = bench.fleet(three.databases.front().second);
    const double before_window = settings.quick ? 2 : 4;
    const double down = settings.quick ? 6 : 10;
    Outage outage;
    {
        NodeFleet fleet{fleet_settings, 1, tag};
        WorkerFleet workers{
            fleet_settings, {default_workers(settings)}, fleet.worker_urls().front(), tag};
        const auto healthy = [&] { return done_in(fleet, "a") + done_in(fleet, "b"); };
        std::this_thread::sleep_for(std::chrono::seconds{1});  // warm
        const auto t1 = Clock::now();
        const auto d1 = healthy();
        std::this_thread::sleep_for(std::chrono::duration<double>(before_window));
        outage.before_rows_per_s = (healthy() - d1) / seconds_since(t1);
        instance_ctl(settings.second_pg_data_dir, false);
        const auto stopped = Clock::now();
        std::this_thread::sleep_for(std::chrono::seconds{1});  // the nodes notice
        const auto t3 = Clock::now();
        const auto d3 = healthy();
        std::this_thread::sleep_for(std::chrono::duration<double>(down - 1));
        outage.during_rows_per_s = (healthy() - d3) / seconds_since(t3);
        // Both healthy databases must still have had rows left, or the rate means nothing.
        const bool valid = healthy() < static_cast<double>(2 * each);
        instance_ctl(settings.second_pg_data_dir, true);
        outage.down_seconds = seconds_since(stopped);
        const auto restarted = Clock::now();
        pqxx::connection third{three.databases.back().second};
        while (seconds_since(restarted) < kMaxCatchUpSeconds) {
            std::this_thread::sleep_for(std::chrono::milliseconds{500});
            fleet.check_alive();
            if (count_rows(third, "status = 'done'") == each) {
                outage.caught_up = true;
                break;
            }
        }
        outage.catch_up_seconds = seconds_since(restarted);
        outage.measured = valid;
    }
    three.drop(context);
    outage_ = outage;
}

void DatabasesScenario::render_table(const BenchSettings& /*settings*/,
                                     const ScenarioRegistry& /*registry*/,
                                     ReportTable& table) const {
    std::string text;
    if (!alone_.empty()) {
        std::vector<double> ratios;
        for (std::size_t i = 0; i < std::min(alone_.size(), beside_idle_.size()); ++i) {
            if (alone_[i] > 0) ratios.push_back(beside_idle_[i] / alone_[i]);
        }
        const auto ratio = median(ratios);
        text += strf(
            "  databases: 1 busy alone %s rows/s, beside %d idle %s rows/s: median ratio "
            "%.3f (target >= 0.9: %s)\n",
            strf("%.0f", median(alone_).value_or(0)).c_str(), kIdleDatabases,
            strf("%.0f", median(beside_idle_).value_or(0)).c_str(), ratio.value_or(0),
            verdict(ratio && *ratio >= 0.9).c_str());
    }
    if (idle_cost_) {
        text += strf(
            "  databases: an idle database costs a node %.2f ms CPU/s and PostgreSQL "
            "%.1f transactions/s, %.2f ms CPU/s\n",
            idle_cost_->node_cpu_ms_per_s, idle_cost_->transactions_per_s,
            idle_cost_->pg_cpu_ms_per_s);
    }
    if (!three_.empty()) {
        text += strf(
            "  databases: 3 busy on two instances, 1 node: %.0f rows/s (2 cores: not "
            "additive)\n",
            median(three_).value_or(0));
    }
    if (outage_) {
        const auto ratio = outage_->before_rows_per_s > 0
                               ? outage_->during_rows_per_s / outage_->before_rows_per_s
                               : 0.0;
        text += strf(
            "  databases: instance down %.1f s: the healthy two %.0f -> %.0f rows/s, "
            "ratio %.3f (target >= 0.8: %s); the third caught up in %.1f s (%s)\n",
            outage_->down_seconds, outage_->before_rows_per_s, outage_->during_rows_per_s, ratio,
            outage_->measured ? verdict(ratio >= 0.8).c_str() : "NOT MEASURED: rows ran out",
            outage_->catch_up_seconds, outage_->caught_up ? "every row done" : "NOT");
    }
    if (!text.empty()) table.put(std::string{kName}, text);
}

void DatabasesScenario::add_json(const ScenarioRegistry& /*registry*/, nlohmann::json& out) const {
    out["databases_idle_ratio"] = nullptr;
    out["databases_3_rows_per_s"] = nullptr;
    out["database_outage_ratio"] = nullptr;
    std::vector<double> ratios;
    for (std::size_t i = 0; i < std::min(alone_.size(), beside_idle_.size()); ++i) {
        if (alone_[i] > 0) ratios.push_back(beside_idle_[i] / alone_[i]);
    }
    if (const auto ratio = median(ratios)) out["databases_idle_ratio"] = json_fine(*ratio);
    if (const auto rate = median(three_)) out["databases_3_rows_per_s"] = json_rate(*rate);
    if (idle_cost_) {
        out["database_idle_node_cpu_ms_per_s"] = json_fine(idle_cost_->node_cpu_ms_per_s);
        out["database_idle_transactions_per_s"] = json_fine(idle_cost_->transactions_per_s);
        out["database_idle_pg_cpu_ms_per_s"] = json_fine(idle_cost_->pg_cpu_ms_per_s);
    }
    if (outage_ && outage_->measured && outage_->before_rows_per_s > 0) {
        out["database_outage_ratio"] =
            json_fine(outage_->during_rows_per_s / outage_->before_rows_per_s);
        out["database_outage_caught_up"] = outage_->caught_up;
    }
}

}  // namespace outboxd::bench
