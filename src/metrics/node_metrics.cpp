#include "outboxd/metrics/node_metrics.hpp"

#include <prometheus/text_serializer.h>

namespace outboxd::metrics {
namespace {

using prometheus::BuildCounter;
using prometheus::BuildGauge;
using prometheus::BuildHistogram;

prometheus::Counter& counter(prometheus::Registry& registry, const char* name, const char* help) {
    return BuildCounter().Name(name).Help(help).Register(registry).Add({});
}

prometheus::Histogram::BucketBoundaries latency_buckets() {
    return {0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30};
}

}  // namespace

NodeMetrics::NodeMetrics(prometheus::Registry& registry)
    : inflight_rows(BuildGauge()
                        .Name("outboxd_outbox_inflight_rows")
                        .Help("Durable pending+claimed rows on this node's shards")
                        .Register(registry)),
      claimed_rows(BuildGauge()
                       .Name("outboxd_outbox_claimed_rows")
                       .Help("Durable claimed rows on this node's shards")
                       .Register(registry)),
      tasks_outstanding(BuildGauge()
                            .Name("outboxd_tasks_outstanding")
                            .Help("Tasks pushed by this node awaiting a worker's answer")
                            .Register(registry)),
      rows_claimed_total(BuildCounter()
                             .Name("outboxd_rows_claimed_total")
                             .Help("Rows claimed by this node")
                             .Register(registry)),
      outcomes_total(BuildCounter()
                         .Name("outboxd_outcomes_total")
                         .Help("Outcomes recorded by this node")
                         .Register(registry)),
      dispatch_latency(BuildHistogram()
                           .Name("outboxd_dispatch_latency_seconds")
                           .Help("From a row becoming due to its task being pushed")
                           .Register(registry)
                           .Add({}, latency_buckets())),
      claim_seconds(BuildHistogram()
                        .Name("outboxd_claim_seconds")
                        .Help("Duration of one claim round trip")
                        .Register(registry)
                        .Add({}, latency_buckets())),
      claims_apart_total(BuildCounter()
                             .Name("outboxd_claims_apart_total")
                             .Help("Claims for routes woken from idle, beside a round in flight")
                             .Register(registry)
                             .Add({})),
      owned_shards(BuildGauge()
                       .Name("outboxd_owned_shards")
                       .Help("Shards this node holds a valid lease on")
                       .Register(registry)
                       .Add({})),
      cluster_nodes_live(BuildGauge()
                             .Name("outboxd_cluster_nodes_live")
                             .Help("Nodes with a live heartbeat")
                             .Register(registry)
                             .Add({})),
      workers_connected(BuildGauge()
                            .Name("outboxd_workers_connected")
                            .Help("Worker sessions connected to this node")
                            .Register(registry)
                            .Add({})),
      protocol_errors_total(BuildCounter()
                                .Name("outboxd_protocol_errors_total")
                                .Help("Error frames and refusals sent to clients, by code")
                                .Register(registry)),
      outcome_write_failures_total(BuildCounter()
                                       .Name("outboxd_outcome_write_failures_total")
                                       .Help("Outcome batches that failed to write and were kept")
                                       .Register(registry)
                                       .Add({})),
      slow_consumers_closed_total(BuildCounter()
                                      .Name("outboxd_slow_consumers_closed_total")
                                      .Help("Worker connections closed for a full write queue")
                                      .Register(registry)
                                      .Add({})),
      rows_released_total(BuildCounter()
                              .Name("outboxd_rows_released_total")
                              .Help("Claimed rows handed back because no worker could take them")
                              .Register(registry)
                              .Add({})),
      rows_rearmed_total(BuildCounter()
                             .Name("outboxd_rows_rearmed_total")
                             .Help("Stale or orphaned claims re-armed by this node")
                             .Register(registry)
                             .Add({})),
      faults_total(BuildCounter()
                       .Name("outboxd_faults_total")
                       .Help("Unexpected errors contained at a handler boundary, by where: "
                             "each ended one request or session, never the node")
                       .Register(registry)),
      connections_open(BuildGauge()
                           .Name("outboxd_connections_open")
                           .Help("HTTP and WebSocket connections open on this node")
                           .Register(registry)
                           .Add({})),
      connections_refused_total(BuildCounter()
                                    .Name("outboxd_connections_refused_total")
                                    .Help("Connections answered 503 at the connection cap")
                                    .Register(registry)
                                    .Add({})),
      accept_errors_total(BuildCounter()
                              .Name("outboxd_accept_errors_total")
                              .Help("Failed accepts (e.g. out of file descriptors); "
                                    "the listener backs off")
                              .Register(registry)
                              .Add({})),
      db_lane_rejected_total(BuildCounter()
                                 .Name("outboxd_db_lane_rejected_total")
                                 .Help("Jobs refused by a full database lane, by lane")
                                 .Register(registry)),
      outcomes_refused_total(BuildCounter()
                                 .Name("outboxd_outcomes_refused_total")
                                 .Help("Outcomes the database refused alone (isolated from their "
                                       "batch); each is recorded as a dead letter instead")
                                 .Register(registry)
                                 .Add({})),
      outcomes_abandoned_total(BuildCounter()
                                   .Name("outboxd_outcomes_abandoned_total")
                                   .Help("Refused outcomes whose dead letter was refused too; "
                                         "their rows stay claimed for the stale-claim backstop")
                                   .Register(registry)
                                   .Add({})),
      claim_route_errors_total(BuildCounter()
                                   .Name("outboxd_claim_route_errors_total")
                                   .Help("Claims of one route refused by the database; the "
                                         "route rests while the others are served")
                                   .Register(registry)
                                   .Add({})),
      http_requests_total(BuildCounter()
                              .Name("outboxd_http_requests_total")
                              .Help("HTTP push requests ended, by target and code class "
                                    "(2xx..5xx, timeout, error)")
                              .Register(registry)),
      http_request_seconds(BuildHistogram()
                               .Name("outboxd_http_request_seconds")
                               .Help("Duration of one HTTP push request, by target")
                               .Register(registry)),
      http_inflight(BuildGauge()
                        .Name("outboxd_http_inflight")
                        .Help("HTTP push requests out now, by target")
                        .Register(registry)),
      ordered_blocked_workflows(
          BuildGauge()
              .Name("outboxd_ordered_blocked_workflows")
              .Help("Workflows of ordered namespaces held back by a dead letter, on this node's "
                    "shards")
              .Register(registry)),
      heartbeats_total(counter(registry, "outboxd_heartbeats_total",
                               "Heartbeat frames received for tasks outstanding on this node")),
      lease_statements_total(counter(registry, "outboxd_lease_statements_total",
                                     "Statements that wrote tasks' durable deadlines and "
                                     "heartbeats (batched)")),
      lease_rows_total(counter(registry, "outboxd_lease_rows_total",
                               "Rows whose durable deadline or heartbeat those statements wrote")),
      cancels_sent_total(counter(registry, "outboxd_cancels_sent_total",
                                 "Cancel frames sent to workers for tasks settled without them")),
      maintenance_runs_total(BuildCounter()
                                 .Name("outboxd_maintenance_runs_total")
                                 .Help("Runs of the upkeep's periodic jobs (reconcile, schedules, "
                                       "retention, gauges), by job and result (ok, failed)")
                                 .Register(registry)) {}

prometheus::Counter& NodeMetrics::fault(const std::string& where) {
    auto& slot = faults_[where];
    if (!slot) slot = &faults_total.Add({{"where", where}});
    return *slot;
}

prometheus::Gauge& NodeMetrics::outstanding(const std::string& ns) {
    auto& slot = outstanding_[ns];
    if (!slot) slot = &tasks_outstanding.Add({{"namespace", ns}});
    return *slot;
}

prometheus::Counter& NodeMetrics::claimed(const std::string& ns) {
    auto& slot = claimed_[ns];
    if (!slot) slot = &rows_claimed_total.Add({{"namespace", ns}});
    return *slot;
}

prometheus::Counter& NodeMetrics::outcome(const std::string& ns, const std::string& outcome) {
    auto& slot = outcomes_[{ns, outcome}];
    if (!slot) slot = &outcomes_total.Add({{"namespace", ns}, {"outcome", outcome}});
    return *slot;
}

void NodeMetrics::set_row_gauges(const std::map<std::string, std::pair<double, double>>& counts) {
    for (auto& [ns, gauges] : row_gauges_) {
        if (!counts.contains(ns)) {
            gauges.first->Set(0);
            gauges.second->Set(0);
        }
    }
    for (const auto& [ns, value] : counts) {
        auto& gauges = row_gauges_[ns];
        if (!gauges.first) {
            gauges.first = &inflight_rows.Add({{"namespace", ns}});
            gauges.second = &claimed_rows.Add({{"namespace", ns}});
        }
        gauges.first->Set(value.first);
        gauges.second->Set(value.second);
    }
}

void NodeMetrics::set_blocked_workflows(const std::map<std::string, double>& counts) {
    for (auto& [ns, gauge] : blocked_gauges_) {
        if (!counts.contains(ns)) gauge->Set(0);
    }
    for (const auto& [ns, value] : counts) {
        auto& gauge = blocked_gauges_[ns];
        if (!gauge) gauge = &ordered_blocked_workflows.Add({{"namespace", ns}});
        gauge->Set(value);
    }
}

std::string serialize(prometheus::Registry& registry) {
    return prometheus::TextSerializer{}.Serialize(registry.Collect());
}

}  // namespace outboxd::metrics
