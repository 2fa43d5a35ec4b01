#include "idle_routes_scenario.hpp"

#include <algorithm>
#include <chrono>
#include <memory>
#include <stdexcept>
#include <thread>

#include <spdlog/spdlog.h>

#include "outboxd/worker/protocol.hpp"

namespace outboxd::bench {
namespace {

constexpr std::chrono::seconds kConnectTimeout{30};
constexpr std::chrono::milliseconds kConnectPoll{50};
// Credit per idle namespace: the node spreads a worker's free credit over its namespaces,
// and a namespace whose part is 0 is no route at all.
constexpr int kCreditPerIdleRoute = 2;

WorkerGroup idle_group(int routes) {
    WorkerGroup group;
    group.name = "idle";
    group.namespaces.clear();
    for (int i = 0; i < routes; ++i) group.namespaces.push_back("idle-" + std::to_string(i));
    group.max_in_flight =
        std::min(routes * kCreditPerIdleRoute, worker::protocol::kMaxCreditWindow);
    return group;
}

}  // namespace

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

}  // namespace outboxd::bench
