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

class NodeMetrics {
public:
    explicit NodeMetrics(prometheus::Registry& registry);

    // Contract names.
    prometheus::Family<prometheus::Gauge>& inflight_rows;         // {namespace}
    prometheus::Family<prometheus::Gauge>& claimed_rows;          // {namespace}
    prometheus::Family<prometheus::Gauge>& tasks_outstanding;     // {namespace}
    prometheus::Family<prometheus::Counter>& rows_claimed_total;  // {namespace}
    prometheus::Family<prometheus::Counter>& outcomes_total;      // {namespace, outcome}
    prometheus::Histogram& dispatch_latency;                      // due -> pushed, seconds
    prometheus::Histogram& claim_seconds;                         // one claim round trip
    prometheus::Counter& claims_apart_total;  // claims for routes woken from idle
    prometheus::Gauge& owned_shards;
    prometheus::Gauge& cluster_nodes_live;
    prometheus::Gauge& workers_connected;

    // Degraded modes and protocol abuse, each counted (style: every degraded mode counts).
    prometheus::Family<prometheus::Counter>& protocol_errors_total;  // {code}
    prometheus::Counter& outcome_write_failures_total;
    prometheus::Counter& slow_consumers_closed_total;
    prometheus::Counter& rows_released_total;  // claimed but no worker left to take them
    prometheus::Counter& rows_rearmed_total;   // stale or orphaned claims re-armed
    prometheus::Family<prometheus::Counter>& faults_total;  // {where}: contained exceptions
    prometheus::Gauge& connections_open;                    // HTTP + WebSocket
    prometheus::Counter& connections_refused_total;         // 503 at the connection cap
    prometheus::Counter& accept_errors_total;
    prometheus::Family<prometheus::Counter>& db_lane_rejected_total;  // {lane}
    prometheus::Counter& outcomes_refused_total;                      // poison outcomes isolated
    prometheus::Counter& outcomes_abandoned_total;  // ... whose dead letter failed too
    prometheus::Counter& claim_route_errors_total;  // a route's claim refused as data
    // HTTP push (README, "HTTP push").
    prometheus::Family<prometheus::Counter>& http_requests_total;     // {target, code_class}
    prometheus::Family<prometheus::Histogram>& http_request_seconds;  // {target}
    prometheus::Family<prometheus::Gauge>& http_inflight;             // {target}
    // Delivery controls (README, "Delivery controls").
    prometheus::Family<prometheus::Gauge>& ordered_blocked_workflows;  // {namespace}
    // Task policy and heartbeats (README, "Task policy and heartbeats").
    prometheus::Counter& heartbeats_total;        // heartbeat frames of outstanding tasks
    prometheus::Counter& lease_statements_total;  // batched lease/heartbeat writes
    prometheus::Counter& lease_rows_total;        // rows those writes applied to
    prometheus::Counter& cancels_sent_total;      // cancel frames sent to workers
    prometheus::Family<prometheus::Counter>& maintenance_runs_total;  // {job, result}

    // A fault contained at `where` (http, websocket, loop, …); loop thread only.
    prometheus::Counter& fault(const std::string& where);

    // Cached children by label value: Family::Add hashes labels on every call.
    prometheus::Gauge& outstanding(const std::string& ns);
    prometheus::Counter& claimed(const std::string& ns);
    prometheus::Counter& outcome(const std::string& ns, const std::string& outcome);
    // Sets the durable gauges from one grouped query; namespaces absent from `counts` go to 0.
    void set_row_gauges(const std::map<std::string, std::pair<double, double>>& counts);
    // Sets the blocked-workflow gauge of every namespace in `counts`; the others it set go to 0.
    void set_blocked_workflows(const std::map<std::string, double>& counts);

private:
    std::map<std::string, prometheus::Counter*> faults_;
    std::map<std::string, prometheus::Gauge*> outstanding_;
    std::map<std::string, prometheus::Counter*> claimed_;
    std::map<std::pair<std::string, std::string>, prometheus::Counter*> outcomes_;
    std::map<std::string, std::pair<prometheus::Gauge*, prometheus::Gauge*>> row_gauges_;
    std::map<std::string, prometheus::Gauge*> blocked_gauges_;
};

// Buckets of outboxd_http_request_seconds.
inline const prometheus::Histogram::BucketBoundaries kHttpSecondsBuckets{
    0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60};

// Prometheus text exposition of everything in `registry`.
[[nodiscard]] std::string serialize(prometheus::Registry& registry);

}  // namespace outboxd::metrics
