#pragma once

// Real outboxd and outboxd-worker processes on a fresh database of the test cluster.

#include <chrono>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "net_client.hpp"
#include "process.hpp"
#include "test_database.hpp"

namespace outboxd::test {

struct NodeHandle {
    std::string name;
    std::uint16_t port = 0;
    std::unique_ptr<Process> process;

    [[nodiscard]] std::string worker_url() const {
        return "ws://127.0.0.1:" + std::to_string(port) + "/v1/workers";
    }
};

// Value of the sample `series` (name and labels, as printed) in Prometheus text.
[[nodiscard]] std::optional<double> metric_sample(const std::string& text,
                                                  const std::string& series);

// Whether the GET /v1/cluster of `node` shows every shard owned once, over `members` nodes
// of nearly equal share.
[[nodiscard]] bool balanced_over(const NodeHandle& node, std::size_t members);

// The command line of an outboxd-worker `name` connecting to `urls`, then `flags`.
[[nodiscard]] std::vector<std::string> worker_command(const std::string& name,
                                                      const std::vector<std::string>& urls,
                                                      const std::vector<std::string>& flags);

// SQL installing a trigger that records every claim and every end of a claim (row,
// claimer, token, statement clock) in claim_audit.
[[nodiscard]] const std::string& claim_audit_sql();

// The `dispatch_key:attempt` lines outboxd-worker --received-log appended, in order.
[[nodiscard]] std::vector<std::string> received(const std::string& path);

class E2eCluster {
public:
    explicit E2eCluster(const std::string& name, bool migrated = true)
        : db(migrated), dir_(scratch_dir(name)) {}

    // Starts a node listening on a free port; waits until it serves. Extra env overrides.
    NodeHandle& start_node(const std::string& name, std::map<std::string, std::string> env = {});
    // Starts a node without waiting; await_ready() it later (nodes started together).
    NodeHandle& launch_node(const std::string& name, std::map<std::string, std::string> env = {});
    void await_ready(NodeHandle& node);
    void await_ready(NodeHandle& node, const std::function<bool(std::uint16_t port)>& ready);
    // As start_node, with its own readiness probe (for a node that does not speak plain HTTP).
    NodeHandle& start_node_with(const std::string& name, std::map<std::string, std::string> env,
                                const std::function<bool(std::uint16_t port)>& ready);
    // Installs a trigger recording every claim and every end of a claim (row, claimer,
    // token, clock) in claim_audit.
    void audit_claims();
    // Claims of a row taken while an earlier claim of it was still open (must be 0).
    [[nodiscard]] std::int64_t overlapping_claims() const;
    // The database's clock now.
    [[nodiscard]] std::string db_now() const;
    // Starts the example worker connected to `urls` with extra flags.
    Process& start_worker(const std::string& name, const std::vector<std::string>& urls,
                          const std::vector<std::string>& flags = {});

    // Polls `done` (every 50 ms) until it holds or `timeout` passes.
    static bool await(const std::function<bool()>& done, std::chrono::milliseconds timeout);
    [[nodiscard]] std::int64_t count(const std::string& where) const;
    // The sample `series` (name and labels, as printed) of the node's GET /metrics.
    [[nodiscard]] static std::optional<double> metric(const NodeHandle& node,
                                                      const std::string& series);
    // Waits until the sample `series` of the node's metrics has grown by `by` from now: the
    // node's own activity, not a guess at how long it takes. False after `timeout`.
    static bool await_growth(const NodeHandle& node, const std::string& series, double by,
                             std::chrono::milliseconds timeout);
    // Waits until the node's upkeep job `job` (reconcile, schedules, …) ran `runs` more times:
    // a node that would have changed something by then has had its chances.
    static bool await_job_runs(const NodeHandle& node, const std::string& job, int runs,
                               std::chrono::milliseconds timeout);
    // The port of the test PostgreSQL, and this cluster's database URL through another port
    // (a TcpProxy in front of PostgreSQL).
    [[nodiscard]] static std::uint16_t pg_port();
    [[nodiscard]] std::string url_via(std::uint16_t port) const;
    [[nodiscard]] const std::string& dir() const { return dir_; }

    // Several databases (README, "Several databases"): another fresh database of the test
    // cluster, named `name` for OUTBOXD_DATABASES; dropped with the cluster.
    TestDatabase& add_database(const std::string& name, bool migrated = true);
    // The database added as `name`.
    [[nodiscard]] const TestDatabase& database(const std::string& name) const;
    // The env of a node serving `db` as `first` and every added database by its name, in the
    // order added (OUTBOXD_DATABASES, plus `control` as OUTBOXD_CONTROL_DATABASE when given).
    // A node started with it gets no OUTBOXD_DATABASE_URL.
    [[nodiscard]] std::map<std::string, std::string> databases_env(
        const std::string& first, const std::string& control = {}) const;

    TestDatabase db;
    // Added databases, by name; declared before the processes, so that they outlive them.
    std::vector<std::pair<std::string, std::unique_ptr<TestDatabase>>> more_databases;
    std::deque<NodeHandle> nodes;  // deque: references stay valid as nodes are added
    std::vector<std::unique_ptr<Process>> workers;

private:
    std::string dir_;
};

}  // namespace outboxd::test
