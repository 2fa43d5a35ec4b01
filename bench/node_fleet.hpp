#pragma once

// outboxd node processes and outboxd-worker processes for the end-to-end scenarios.
//
// NodeFleet starts `count` nodes on 127.0.0.1:0 against one database, learns each one's
// port from its `event=listening … address=HOST:PORT` log line, and waits until the 1024
// shard leases are balanced over all of them, so that the clock of a run never includes
// cluster formation. Driver thread only (see ChildProcess).

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "child_process.hpp"

namespace outboxd::bench {

// The executables NodeFleet and WorkerFleet start from FleetSettings::bin_dir (each the
// CMake target of that name).
inline constexpr std::string_view kNodeBinary = "outboxd";
inline constexpr std::string_view kWorkerBinary = "outboxd-worker";

struct FleetSettings {
    std::string bin_dir;  // holds kNodeBinary and kWorkerBinary
    std::string log_dir;  // one log file per process
    std::string database_url;
    int batch_size = 1024;                                       // OUTBOXD_BATCH_SIZE
    std::vector<std::pair<std::string, std::string>> extra_env;  // e.g. from --node-env
};

class NodeFleet {
public:
    // Throws std::runtime_error (with the log tail) when a node exits or does not report
    // its port, or the leases do not settle, within kStartTimeout.
    NodeFleet(const FleetSettings& settings, int count, const std::string& tag);
    ~NodeFleet();
    NodeFleet(const NodeFleet&) = delete;
    NodeFleet& operator=(const NodeFleet&) = delete;

    // ws://127.0.0.1:PORT/v1/workers of each node, in start order.
    [[nodiscard]] const std::vector<std::string>& worker_urls() const { return urls_; }
    [[nodiscard]] const std::vector<std::string>& http_urls() const { return http_urls_; }
    // Rows the nodes have written `done` so far: the sum of their
    // outboxd_outcomes_total{outcome="done"} counters (GET /metrics on each). Unlike any
    // query on the outbox, it costs the database nothing however many dead row versions an
    // old snapshot keeps around.
    [[nodiscard]] std::int64_t rows_done() const;
    // The same for one namespace.
    [[nodiscard]] std::int64_t rows_done(const std::string& ns) const;
    // Worker sessions connected to the nodes (outboxd_workers_connected).
    [[nodiscard]] std::int64_t workers_connected() const;
    // Claim rounds the nodes have run, and the seconds they took (outboxd_claim_seconds).
    struct ClaimRounds {
        std::int64_t rounds = 0;
        double seconds = 0;
    };
    [[nodiscard]] ClaimRounds claim_rounds() const;
    // The sum over the nodes of every sample of metric `name` whose labels contain each of
    // `labels` (e.g. `outcome="done"`).
    [[nodiscard]] double metric_sum(std::string_view name,
                                    const std::vector<std::string>& labels = {}) const;
    [[nodiscard]] double cpu_seconds() const;  // summed over the nodes
    // Throws std::runtime_error with the log tail when a node has exited.
    void check_alive();
    // SIGTERM (drain), SIGKILL after the grace. Idempotent.
    void stop();
    // SIGKILL to node `index` (start order), reaped; the others run on.
    void kill(std::size_t index);

    static constexpr std::chrono::seconds kStartTimeout{60};

private:
    void wait_for_balanced_leases(int count);
    void wait_for_ready();

    std::string database_url_;
    std::vector<std::unique_ptr<ChildProcess>> nodes_;
    std::vector<std::string> urls_;
    std::vector<std::string> http_urls_;
};

// One kind of outboxd-worker process: what its hello serves and its credit window.
struct WorkerGroup {
    std::string name = "worker";  // log files: bench-<tag>-<name>-<n>.log
    int count = 1;
    std::vector<std::string> namespaces{"default"};  // one route per namespace
    std::string task_queue = "default";
    int max_in_flight = 1024;
    std::size_t result_bytes = 0;   // each noop answers a JSON string result this long; 0: null
    std::string token{};            // the credential they present; empty: none
    std::string activity = "noop";  // or "sleep": each task sleeps its input's "ms"
    bool received_log = false;      // each logs the dispatch key of every task it receives
};

// outboxd-worker processes running their group's activity, seeded with one node URL each
// (they discover the rest of the cluster).
class WorkerFleet {
public:
    WorkerFleet(const FleetSettings& settings, const std::vector<WorkerGroup>& groups,
                const std::string& seed_url, const std::string& tag);
    ~WorkerFleet();
    WorkerFleet(const WorkerFleet&) = delete;
    WorkerFleet& operator=(const WorkerFleet&) = delete;

    [[nodiscard]] double cpu_seconds() const;
    void check_alive();
    void stop();
    // Dispatch keys received more than once, over the received logs of the groups that
    // keep one (WorkerGroup::received_log).
    [[nodiscard]] std::int64_t keys_received_twice() const;

private:
    std::vector<std::unique_ptr<ChildProcess>> workers_;
    std::vector<std::string> received_logs_;
};

}  // namespace outboxd::bench
