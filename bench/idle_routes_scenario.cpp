#include "idle_routes_scenario.hpp"

#include <algorithm>
#include <chrono>
#include <memory>
#include <stdexcept>
#include <thread>

#include <spdlog/spdlog.h>

#include "outboxd/worker/protocol.hpp"
#include "report_format.hpp"
#include "route_report.hpp"
#include "scenario_registry.hpp"

namespace outboxd::bench {
namespace {

constexpr std::chrono::seconds kConnectTimeout{30};
constexpr std::chrono::milliseconds kConnectPoll{50};
// Credit per idle namespace: the node spreads a worker's free credit over its namespaces,
// and a namespace whose part is 0 is no route at all.
constexpr int kCreditPerIdleRoute = 2;
// Target of the many-routes issue.
constexpr double kTargetIdleRoutesRatio = 0.9;

WorkerGroup idle_group(int routes) {
    WorkerGroup group;
    group.name = "idle";
    group.namespaces.clear();
    for (int i = 0; i < routes; ++i) group.namespaces.push_back("idle-" + std::to_string(i));
    group.max_in_flight =
        std::min(routes * kCreditPerIdleRoute, worker::protocol::kMaxCreditWindow);
    return group;
}

E2eResult run_idle_routes(const BenchContext& context, const std::string& tag) {
    const auto& settings = context.settings;
    if (settings.idle_routes * kCreditPerIdleRoute > worker::protocol::kMaxCreditWindow) {
        throw std::invalid_argument{
            "--idle-routes: at most " +
            std::to_string(worker::protocol::kMaxCreditWindow / kCreditPerIdleRoute)};
    }
    const auto database = "bench_" + tag;
    const auto url = context.databases.create_migrated(database);
    spdlog::info("{}: staging {} rows", tag, settings.rows);
    stage_pending_rows(url, settings.rows, "idle-run-");
    settle(url);

    std::unique_ptr<WorkerFleet> idle;
    DrainOptions options;
    options.with_nodes = [&](NodeFleet& fleet) {
        const auto connected_before = fleet.workers_connected();
        idle = std::make_unique<WorkerFleet>(context.fleet(url),
                                             std::vector{idle_group(settings.idle_routes)},
                                             fleet.worker_urls().front(), tag);
        // The session counts as connected once its hello is registered: its routes exist.
        const auto deadline = std::chrono::steady_clock::now() + kConnectTimeout;
        while (fleet.workers_connected() <= connected_before) {
            idle->check_alive();
            fleet.check_alive();
            if (std::chrono::steady_clock::now() > deadline) {
                throw std::runtime_error{tag + ": the idle worker did not connect in time"};
            }
            std::this_thread::sleep_for(kConnectPoll);
        }
        spdlog::info("{}: idle worker connected with {} namespaces", tag, settings.idle_routes);
    };
    auto result = drain_e2e(context, url, 1, tag, options);
    // A worker that left mid-run took its routes with it: the run measured something else.
    idle->check_alive();
    idle->stop();
    context.databases.drop(database);
    return result;
}

// Each run over the 1-node e2e run of its repetition, just before it.
std::vector<double> idle_ratios(const std::vector<E2eResult>& runs, const E2eScenario& e2e) {
    return paired_ratios(runs, e2e.one_node_runs());
}

}  // namespace

void IdleRoutesScenario::repeat(const Turn& turn) {
    runs_.push_back(run_idle_routes(turn.context, "idle_routes" + turn.suffix()));
    spdlog::info("idle_routes{}: {:.0f} rows/s", turn.suffix(), runs_.back().rows_per_s());
}

void IdleRoutesScenario::render_table(const BenchSettings& settings,
                                      const ScenarioRegistry& registry, ReportTable& table) const {
    const auto* run = median_run(runs_);
    if (!run) return;
    const auto& e2e = registry.get<E2eScenario>();
    put_one_route(e2e, table);
    const auto ratios = idle_ratios(runs_, e2e);
    const double ratio = median(ratios).value_or(0);
    table.put(std::string{kName},
              strf("  1 busy route + %d idle routes: %.0f rows/s, ratio %.3f (target >= %.1f: %s)"
                   "; runs %s, each over its repetition's e2e run %s; %s\n",
                   settings.idle_routes, run->rows_per_s(), ratio, kTargetIdleRoutesRatio,
                   verdict(ratio >= kTargetIdleRoutesRatio).c_str(), rates_of(runs_).c_str(),
                   ratio_list(ratios).c_str(), drain_note(*run).c_str()));
}

void IdleRoutesScenario::add_json(const ScenarioRegistry& registry, nlohmann::json& out) const {
    out["idle_routes_ratio"] = nullptr;
    const auto* run = median_run(runs_);
    if (!run) return;
    const auto& e2e = registry.get<E2eScenario>();
    add_one_route_json(e2e, out);
    const auto ratios = idle_ratios(runs_, e2e);
    if (const auto ratio = median(ratios)) out["idle_routes_ratio"] = json_fine(*ratio);
    for (const double ratio : ratios) out["idle_routes_ratio_runs"].push_back(json_fine(ratio));
    out["idle_routes_rows_per_s"] = json_rate(run->rows_per_s());
    for (const auto& each : runs_) out["idle_routes_runs"].push_back(json_rate(each.rows_per_s()));
    out["idle_routes_complete"] = all_complete(runs_);
    out["idle_routes_ms_per_claim_round"] = json_fine(ms_per_round(*run));
    out["idle_routes_rows_per_claim_round"] = json_fine(rows_per_round(*run));
}

double IdleRoutesScenario::max_foreign_cpu() const {
    double most = 0;
    for (const auto& run : runs_) most = std::max(most, run.foreign_cpu);
    return most;
}

}  // namespace outboxd::bench
