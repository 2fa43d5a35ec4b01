#pragma once

// Every metric a node exports (their names, in README "Metrics", are a public contract), declared
// in one place. Families live in the registry passed in; the registry must outlive this object.
// Prometheus types are thread-safe; the label caches here are used from the loop thread.

#include <map>
#include <memory>
#include <string>

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

namespace outboxd::metrics {

// The node's own metrics, and the families of every database's (DatabaseMetrics).
class NodeMetrics {
public:
    explicit NodeMetrics(prometheus::Registry& registry);

    // Per database: each child carries {database} (README, "Metrics").
    prometheus::Family<prometheus::Gauge>& inflight_rows;         // {database, namespace}
    prometheus::Family<prometheus::Gauge>& claimed_rows;          // {database, namespace}
    prometheus::Family<prometheus::Gauge>& tasks_outstanding;     // {database, namespace}
    prometheus::Family<prometheus::Counter>& rows_claimed_total;  // {database, namespace}
    prometheus::Family<prometheus::Counter>& outcomes_total;      // {database, namespace, outcome}
    prometheus::Family<prometheus::Histogram>& dispatch_latency;  // due -> pushed, seconds
    prometheus::Family<prometheus::Histogram>& claim_seconds;     // one claim round trip
    prometheus::Family<prometheus::Counter>& claims_apart_total;  // routes woken from idle
    prometheus::Family<prometheus::Gauge>& owned_shards;
    prometheus::Family<prometheus::Gauge>& cluster_nodes_live;
    prometheus::Family<prometheus::Gauge>& database_up;  // 1: reached, registered, ticking
    prometheus::Family<prometheus::Counter>& outcome_write_failures_total;
    prometheus::Family<prometheus::Counter>& rows_released_total;       // no worker left for them
    prometheus::Family<prometheus::Counter>& rows_rearmed_total;        // stale or orphaned claims
    prometheus::Family<prometheus::Counter>& db_lane_rejected_total;    // {database, lane}
    prometheus::Family<prometheus::Counter>& outcomes_refused_total;    // poison outcomes isolated
    prometheus::Family<prometheus::Counter>& outcomes_abandoned_total;  // ... dead letter failed
    prometheus::Family<prometheus::Counter>& claim_route_errors_total;  // refused as data
    // Delivery controls (README, "Delivery controls").
    prometheus::Family<prometheus::Gauge>& ordered_blocked_workflows;  // {database, namespace}
    // Task policy and heartbeats (README, "Task policy and heartbeats").
    prometheus::Family<prometheus::Counter>& heartbeats_total;        // of outstanding tasks
    prometheus::Family<prometheus::Counter>& lease_statements_total;  // batched lease writes
    prometheus::Family<prometheus::Counter>& lease_rows_total;  // rows those writes applied to
    prometheus::Family<prometheus::Counter>& maintenance_runs_total;  // {database, job, result}

    // The node's own.
    prometheus::Gauge& workers_connected;
    // Degraded modes and protocol abuse, each counted (style: every degraded mode counts).
    prometheus::Family<prometheus::Counter>& protocol_errors_total;  // {code}
    prometheus::Counter& slow_consumers_closed_total;
    prometheus::Family<prometheus::Counter>& faults_total;  // {where}: contained exceptions
    prometheus::Gauge& connections_open;                    // HTTP + WebSocket
    prometheus::Counter& connections_refused_total;         // 503 at the connection cap
    prometheus::Counter& accept_errors_total;
    // HTTP push (README, "HTTP push").
    prometheus::Family<prometheus::Counter>& http_requests_total;     // {target, code_class}
    prometheus::Family<prometheus::Histogram>& http_request_seconds;  // {target}
    prometheus::Family<prometheus::Gauge>& http_inflight;             // {target}
    // Broker targets (README, "Targets"), by {database, target, kind}: messages ended by
    // outcome (acked, failed, dead), unconfirmed messages out, and 1 while connected.
    prometheus::Family<prometheus::Counter>& target_messages_total;
    prometheus::Family<prometheus::Gauge>& target_inflight;
    prometheus::Family<prometheus::Gauge>& target_connected;
    prometheus::Counter& cancels_sent_total;  // cancel frames sent to workers

    // A fault contained at `where` (http, websocket, loop, …); loop thread only.
    prometheus::Counter& fault(const std::string& where);

private:
    std::map<std::string, prometheus::Counter*> faults_;
};

// One database's metrics: the children of the node's families labelled {database}. Held by
// its engine; loop thread only (the label caches), Prometheus types are thread-safe.
class DatabaseMetrics {
public:
    DatabaseMetrics(NodeMetrics& node, std::string database);
    DatabaseMetrics(const DatabaseMetrics&) = delete;
    DatabaseMetrics& operator=(const DatabaseMetrics&) = delete;

    [[nodiscard]] const std::string& database() const { return database_; }

    prometheus::Histogram& dispatch_latency;
    prometheus::Histogram& claim_seconds;
    prometheus::Counter& claims_apart_total;
    prometheus::Gauge& owned_shards;
    prometheus::Gauge& cluster_nodes_live;
    prometheus::Gauge& up;
    prometheus::Counter& outcome_write_failures_total;
    prometheus::Counter& rows_released_total;
    prometheus::Counter& rows_rearmed_total;
    prometheus::Counter& outcomes_refused_total;
    prometheus::Counter& outcomes_abandoned_total;
    prometheus::Counter& claim_route_errors_total;
    prometheus::Counter& heartbeats_total;
    prometheus::Counter& lease_statements_total;
    prometheus::Counter& lease_rows_total;

    // The node's: a fault is where it happened, whatever the database.
    prometheus::Counter& fault(const std::string& where) { return node_.fault(where); }

    // Cached children by label value: Family::Add hashes labels on every call.
    prometheus::Gauge& outstanding(const std::string& ns);
    prometheus::Counter& claimed(const std::string& ns);
    prometheus::Counter& outcome(const std::string& ns, const std::string& outcome);
    prometheus::Counter& maintenance_run(const std::string& job, const std::string& result);
    // Refusals of the lane `lane` (any thread may count; made once, on the loop).
    prometheus::Counter& lane_rejected(const std::string& lane);
    // Sets the durable gauges from one grouped query; namespaces absent from `counts` go to 0.
    void set_row_gauges(const std::map<std::string, std::pair<double, double>>& counts);
    // Sets the blocked-workflow gauge of every namespace in `counts`; the others it set go to 0.
    void set_blocked_workflows(const std::map<std::string, double>& counts);

private:
    NodeMetrics& node_;
    std::string database_;
    std::map<std::string, prometheus::Gauge*> outstanding_;
    std::map<std::string, prometheus::Counter*> claimed_;
    std::map<std::pair<std::string, std::string>, prometheus::Counter*> outcomes_;
    std::map<std::pair<std::string, std::string>, prometheus::Counter*> maintenance_runs_;
    std::map<std::string, std::pair<prometheus::Gauge*, prometheus::Gauge*>> row_gauges_;
    std::map<std::string, prometheus::Gauge*> blocked_gauges_;
};

// Buckets of outboxd_http_request_seconds.
inline const prometheus::Histogram::BucketBoundaries kHttpSecondsBuckets{
    0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60};

// Prometheus text exposition of everything in `registry`.
[[nodiscard]] std::string serialize(prometheus::Registry& registry);

}  // namespace outboxd::metrics
