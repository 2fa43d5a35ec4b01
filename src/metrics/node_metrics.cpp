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

template <typename Builder>
auto& family(Builder builder, prometheus::Registry& registry, const char* name, const char* help) {
    return builder.Name(name).Help(help).Register(registry);
}

prometheus::Histogram::BucketBoundaries latency_buckets() {
    return {0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30};
}

}  // namespace

NodeMetrics::NodeMetrics(prometheus::Registry& registry)
    : inflight_rows(family(BuildGauge(), registry, "outboxd_outbox_inflight_rows",
                           "Durable pending+claimed rows on this node's shards")),
      claimed_rows(family(BuildGauge(), registry, "outboxd_outbox_claimed_rows",
                          "Durable claimed rows on this node's shards")),
      tasks_outstanding(family(BuildGauge(), registry, "outboxd_tasks_outstanding",
                               "Tasks pushed by this node awaiting a worker's answer")),
      rows_claimed_total(family(BuildCounter(), registry, "outboxd_rows_claimed_total",
                                "Rows claimed by this node")),
      outcomes_total(family(BuildCounter(), registry, "outboxd_outcomes_total",
                            "Outcomes recorded by this node")),
      dispatch_latency(family(BuildHistogram(), registry, "outboxd_dispatch_latency_seconds",
                              "From a row becoming due to its task being pushed")),
      claim_seconds(family(BuildHistogram(), registry, "outboxd_claim_seconds",
                           "Duration of one claim round trip")),
      claims_apart_total(family(BuildCounter(), registry, "outboxd_claims_apart_total",
                                "Claims for routes woken from idle, beside a round in flight")),
      owned_shards(family(BuildGauge(), registry, "outboxd_owned_shards",
                          "Shards this node holds a valid lease on")),
      cluster_nodes_live(family(BuildGauge(), registry, "outboxd_cluster_nodes_live",
                                "Nodes with a live heartbeat")),
      database_up(family(BuildGauge(), registry, "outboxd_database_up",
                         "1 while the database is reached and this node is a live member of "
                         "its cluster, else 0")),
      outcome_write_failures_total(family(BuildCounter(), registry,
                                          "outboxd_outcome_write_failures_total",
                                          "Outcome batches that failed to write and were kept")),
      rows_released_total(family(BuildCounter(), registry, "outboxd_rows_released_total",
                                 "Claimed rows handed back because no worker could take them")),
      rows_rearmed_total(family(BuildCounter(), registry, "outboxd_rows_rearmed_total",
                                "Stale or orphaned claims re-armed by this node")),
      db_lane_rejected_total(family(BuildCounter(), registry, "outboxd_db_lane_rejected_total",
                                    "Jobs refused by a full database lane, by lane")),
      outcomes_refused_total(family(BuildCounter(), registry, "outboxd_outcomes_refused_total",
                                    "Outcomes the database refused alone (isolated from their "
                                    "batch); each is recorded as a dead letter instead")),
      outcomes_abandoned_total(family(BuildCounter(), registry, "outboxd_outcomes_abandoned_total",
                                      "Refused outcomes whose dead letter was refused too; "
                                      "their rows stay claimed for the stale-claim backstop")),
      claim_route_errors_total(family(BuildCounter(), registry, "outboxd_claim_route_errors_total",
                                      "Claims of one route refused by the database; the route "
                                      "rests while the others are served")),
      ordered_blocked_workflows(family(BuildGauge(), registry, "outboxd_ordered_blocked_workflows",
                                       "Workflows of ordered namespaces held back by a dead "
                                       "letter, on this node's shards")),
      heartbeats_total(family(BuildCounter(), registry, "outboxd_heartbeats_total",
                              "Heartbeat frames received for tasks outstanding on this node")),
      lease_statements_total(family(BuildCounter(), registry, "outboxd_lease_statements_total",
                                    "Statements that wrote tasks' durable deadlines and "
                                    "heartbeats (batched)")),
      lease_rows_total(family(BuildCounter(), registry, "outboxd_lease_rows_total",
                              "Rows whose durable deadline or heartbeat those statements wrote")),
      maintenance_runs_total(family(BuildCounter(), registry, "outboxd_maintenance_runs_total",
                                    "Runs of the upkeep's periodic jobs (reconcile, schedules, "
                                    "retention, gauges), by job and result (ok, failed)")),
      workers_connected(family(BuildGauge(), registry, "outboxd_workers_connected",
                               "Worker sessions connected to this node")
                            .Add({})),
      protocol_errors_total(family(BuildCounter(), registry, "outboxd_protocol_errors_total",
                                   "Error frames and refusals sent to clients, by code")),
      slow_consumers_closed_total(counter(registry, "outboxd_slow_consumers_closed_total",
                                          "Worker connections closed for a full write queue")),
      faults_total(family(BuildCounter(), registry, "outboxd_faults_total",
                          "Unexpected errors contained at a handler boundary, by where: each "
                          "ended one request or session, never the node")),
      connections_open(family(BuildGauge(), registry, "outboxd_connections_open",
                              "HTTP and WebSocket connections open on this node")
                           .Add({})),
      connections_refused_total(counter(registry, "outboxd_connections_refused_total",
                                        "Connections answered 503 at the connection cap")),
      accept_errors_total(counter(registry, "outboxd_accept_errors_total",
                                  "Failed accepts (e.g. out of file descriptors); the listener "
                                  "backs off")),
      http_requests_total(family(BuildCounter(), registry, "outboxd_http_requests_total",
                                 "HTTP push requests ended, by target and code class "
                                 "(2xx..5xx, timeout, error)")),
      http_request_seconds(family(BuildHistogram(), registry, "outboxd_http_request_seconds",
                                  "Duration of one HTTP push request, by target")),
      http_inflight(family(BuildGauge(), registry, "outboxd_http_inflight",
                           "HTTP push requests out now, by target")),
      target_messages_total(family(BuildCounter(), registry, "outboxd_target_messages_total",
                                   "Messages to broker targets ended, by database, target, kind "
                                   "and outcome (acked, failed, dead)")),
      target_inflight(family(BuildGauge(), registry, "outboxd_target_inflight",
                             "Messages to broker targets published and not yet confirmed")),
      target_connected(family(BuildGauge(), registry, "outboxd_target_connected",
                              "1 while this node holds a connection to the broker target")),
      cancels_sent_total(counter(registry, "outboxd_cancels_sent_total",
                                 "Cancel frames sent to workers for tasks settled without them")) {}

prometheus::Counter& NodeMetrics::fault(const std::string& where) {
    auto& slot = faults_[where];
    if (!slot) slot = &faults_total.Add({{"where", where}});
    return *slot;
}

DatabaseMetrics::DatabaseMetrics(NodeMetrics& node, std::string database)
    : dispatch_latency(node.dispatch_latency.Add({{"database", database}}, latency_buckets())),
      claim_seconds(node.claim_seconds.Add({{"database", database}}, latency_buckets())),
      claims_apart_total(node.claims_apart_total.Add({{"database", database}})),
      owned_shards(node.owned_shards.Add({{"database", database}})),
      cluster_nodes_live(node.cluster_nodes_live.Add({{"database", database}})),
      up(node.database_up.Add({{"database", database}})),
      outcome_write_failures_total(node.outcome_write_failures_total.Add({{"database", database}})),
      rows_released_total(node.rows_released_total.Add({{"database", database}})),
      rows_rearmed_total(node.rows_rearmed_total.Add({{"database", database}})),
      outcomes_refused_total(node.outcomes_refused_total.Add({{"database", database}})),
      outcomes_abandoned_total(node.outcomes_abandoned_total.Add({{"database", database}})),
      claim_route_errors_total(node.claim_route_errors_total.Add({{"database", database}})),
      heartbeats_total(node.heartbeats_total.Add({{"database", database}})),
      lease_statements_total(node.lease_statements_total.Add({{"database", database}})),
      lease_rows_total(node.lease_rows_total.Add({{"database", database}})),
      node_(node),
      database_(std::move(database)) {}

prometheus::Gauge& DatabaseMetrics::outstanding(const std::string& ns) {
    auto& slot = outstanding_[ns];
    if (!slot) slot = &node_.tasks_outstanding.Add({{"database", database_}, {"namespace", ns}});
    return *slot;
}

prometheus::Counter& DatabaseMetrics::claimed(const std::string& ns) {
    auto& slot = claimed_[ns];
    if (!slot) slot = &node_.rows_claimed_total.Add({{"database", database_}, {"namespace", ns}});
    return *slot;
}

prometheus::Counter& DatabaseMetrics::outcome(const std::string& ns, const std::string& outcome) {
    auto& slot = outcomes_[{ns, outcome}];
    if (!slot) {
        slot = &node_.outcomes_total.Add(
            {{"database", database_}, {"namespace", ns}, {"outcome", outcome}});
    }
    return *slot;
}

prometheus::Counter& DatabaseMetrics::maintenance_run(const std::string& job,
                                                      const std::string& result) {
    auto& slot = maintenance_runs_[{job, result}];
    if (!slot) {
        slot = &node_.maintenance_runs_total.Add(
            {{"database", database_}, {"job", job}, {"result", result}});
    }
    return *slot;
}

prometheus::Counter& DatabaseMetrics::lane_rejected(const std::string& lane) {
    return node_.db_lane_rejected_total.Add({{"database", database_}, {"lane", lane}});
}

void DatabaseMetrics::set_row_gauges(
    const std::map<std::string, std::pair<double, double>>& counts) {
    for (auto& [ns, gauges] : row_gauges_) {
        if (!counts.contains(ns)) {
            gauges.first->Set(0);
            gauges.second->Set(0);
        }
    }
    for (const auto& [ns, value] : counts) {
        auto& gauges = row_gauges_[ns];
        if (!gauges.first) {
            gauges.first = &node_.inflight_rows.Add({{"database", database_}, {"namespace", ns}});
            gauges.second = &node_.claimed_rows.Add({{"database", database_}, {"namespace", ns}});
        }
        gauges.first->Set(value.first);
        gauges.second->Set(value.second);
    }
}

void DatabaseMetrics::set_blocked_workflows(const std::map<std::string, double>& counts) {
    for (auto& [ns, gauge] : blocked_gauges_) {
        if (!counts.contains(ns)) gauge->Set(0);
    }
    for (const auto& [ns, value] : counts) {
        auto& gauge = blocked_gauges_[ns];
        if (!gauge) {
            gauge =
                &node_.ordered_blocked_workflows.Add({{"database", database_}, {"namespace", ns}});
        }
        gauge->Set(value);
    }
}

std::string serialize(prometheus::Registry& registry) {
    return prometheus::TextSerializer{}.Serialize(registry.Collect());
}

}  // namespace outboxd::metrics
