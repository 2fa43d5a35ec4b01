#include "scenario_list.hpp"

#include <memory>
#include <vector>

#include "access_scenario.hpp"
#include "broker_scenario.hpp"
#include "client_workers_scenario.hpp"
#include "controls_scenario.hpp"
#include "databases_scenario.hpp"
#include "e2e_scenario.hpp"
#include "failover_scenario.hpp"
#include "floor_scenario.hpp"
#include "heartbeat_scenario.hpp"
#include "history_scenario.hpp"
#include "http_push_scenario.hpp"
#include "idle_routes_scenario.hpp"
#include "latency_scenario.hpp"
#include "limit_scenario.hpp"
#include "quiet_tenant_scenario.hpp"
#include "report_format.hpp"
#include "results_scenario.hpp"
#include "route_report.hpp"
#include "tenants_scenario.hpp"
#include "wake_scenario.hpp"
#include "weighted_scenario.hpp"

namespace outboxd::bench {
namespace {

// Every scenario, one line each, in run order: each repetition runs their repeat() in this
// order (floor, e2e with idle_routes right after its 1-node run, http_push, brokers, results,
// clients, tenants), then their once() in this order (limit, latency, wake, history,
// weighted, quiet_tenant, heartbeats, http_push, brokers, controls, access, databases,
// failover).
// --help lists them so.
std::vector<std::unique_ptr<Scenario>> scenarios() {
    std::vector<std::unique_ptr<Scenario>> list;
    list.push_back(std::make_unique<FloorScenario>());
    list.push_back(std::make_unique<E2eScenario>());
    list.push_back(std::make_unique<IdleRoutesScenario>());
    list.push_back(std::make_unique<LimitScenario>());
    list.push_back(std::make_unique<LatencyScenario>());
    list.push_back(std::make_unique<WakeScenario>());
    list.push_back(std::make_unique<HistoryScenario>());
    list.push_back(std::make_unique<WeightedScenario>());
    list.push_back(std::make_unique<QuietTenantScenario>());
    list.push_back(std::make_unique<HeartbeatScenario>());
    list.push_back(std::make_unique<HttpPushScenario>());
    list.push_back(std::make_unique<BrokerScenario>());
    list.push_back(std::make_unique<ResultsScenario>());
    list.push_back(std::make_unique<ClientWorkersScenario>());
    list.push_back(std::make_unique<TenantsScenario>());
    list.push_back(std::make_unique<ControlsScenario>());
    list.push_back(std::make_unique<AccessScenario>());
    list.push_back(std::make_unique<DatabasesScenario>());
    list.push_back(std::make_unique<FailoverScenario>());
    return list;
}

// The table, top to bottom: the parts the scenarios put (ReportTable), by key. A part not
// named here follows the last group.
std::vector<TableGroup> layout() {
    return {
        {kThroughputHeading, true, {"floor", "limit", "e2e"}},
        {"", false, {"latency", "wake", "history"}},
        {kRoutesHeading,
         false,
         {"one_route", "idle_routes", "tenants", "weighted", "quiet_tenant"}},
        {"",
         false,
         {"http_push", "brokers", "controls", "results", "heartbeats", "clients", "limit_grid"}},
    };
}

}  // namespace

ScenarioRegistry make_scenario_registry() { return ScenarioRegistry{scenarios(), layout()}; }

}  // namespace outboxd::bench
