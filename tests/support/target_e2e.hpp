#pragma once

// What the e2e tests of targets share (HTTP, NATS, AMQP): a node's settings for quick retries
// and refreshes that may reach 127.0.0.1, a target as the API shows it, a PUT that waits for
// the node to be connected, and rows staged for a route.

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "e2e_cluster.hpp"

namespace outboxd::test {

// Quick retries and refreshes, so that a test sees several attempts in seconds; 127.0.0.1
// allowed, where the tests' receivers and brokers listen. `extra` adds or replaces settings.
[[nodiscard]] std::map<std::string, std::string> target_env(
    const std::map<std::string, std::string>& extra = {});

// GET /v1/targets/{name} on `node`.
[[nodiscard]] nlohmann::json get_target(const NodeHandle& node, const std::string& name);

// PUT /v1/targets/{name} (must answer 200), then waits until `node` holds a connection to
// the target (node.connected).
void put_connected(const NodeHandle& node, const std::string& name, const nlohmann::json& body);

// Waits until `node` reports the target down with the reason (node.connected false,
// node.last_error set) — a connection refused or failed — and returns the target as GET shows
// it then. Fails the test after 20 s.
nlohmann::json await_refused(const NodeHandle& node, const std::string& name);

// Three nodes started with `env` ("node-1", "node-2", "node-3"), their shards balanced, the
// target `name` PUT through the first with `body`, and every node holding `share` of its
// max_in_flight and connected. Returns the nodes in that order.
std::vector<NodeHandle*> three_nodes_serving(E2eCluster& cluster,
                                             const std::map<std::string, std::string>& env,
                                             const std::string& name, const nlohmann::json& body,
                                             int share);

// Samples every node's outboxd_target_inflight for target `name` of `kind` until `done` rows
// are done, checking that none is past `share`; returns the largest sum over the nodes seen.
int busiest_in_flight(E2eCluster& cluster, const std::string& kind, const std::string& name,
                      int share, std::int64_t done);

// `rows` pending rows of activity `type` in namespace default: dispatch keys
// "<prefix>-<n>", workflow ids "order-<n>", input {"n": n}.
void stage_rows(E2eCluster& cluster, int rows, const std::string& type,
                const std::string& prefix = "r");

}  // namespace outboxd::test
