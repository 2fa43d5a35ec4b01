#pragma once

// Real nodes serving several outbox databases at once (OUTBOXD_DATABASES), and what tests
// read of those databases: a database on any PostgreSQL server, the shard leases of each,
// each node's readiness per database.

#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <pqxx/pqxx>

#include "e2e_cluster.hpp"
#include "process.hpp"

namespace outboxd::test {

// A database created on the server of `admin_url` (any PostgreSQL, not only the suite's
// shared one), not migrated; dropped, its sessions ended, when this object goes.
class ServerDatabase {
public:
    ServerDatabase(std::string admin_url, std::string name);
    ~ServerDatabase();
    ServerDatabase(const ServerDatabase&) = delete;
    ServerDatabase& operator=(const ServerDatabase&) = delete;

    [[nodiscard]] const std::string& name() const { return name_; }
    [[nodiscard]] const std::string& url() const { return url_; }

private:
    std::string admin_url_;
    std::string name_;
    std::string url_;
};

// One database as nodes are told of it: its name in OUTBOXD_DATABASES and its URL.
struct ServedDatabase {
    std::string name;
    std::string url;
};

// The OUTBOXD_DATABASES value naming `databases`, in their order.
[[nodiscard]] std::string databases_setting(const std::vector<ServedDatabase>& databases);

// Runs `sql` in its own transaction on the database at `url`.
pqxx::result exec_on(const std::string& url, const std::string& sql);
// SELECT count(*) FROM outbox WHERE `where`, on the database at `url`.
[[nodiscard]] std::int64_t count_rows(const std::string& url, const std::string& where);

// The live shard leases of one database (live_shard_leases, by its clock), by node id.
struct LeaseCover {
    int uncovered = 0;                               // shards no live lease holds
    std::map<std::string, std::vector<int>> shards;  // node id -> its shards, ascending

    // Every shard held, each by one of `nodes` (lease rows are one per shard: no overlap).
    [[nodiscard]] bool covered_by(const std::set<std::string>& nodes) const;
    // Covered by exactly `members` nodes, each holding 1024/members shards give or take one
    // (the tolerance of balanced_over).
    [[nodiscard]] bool balanced(std::size_t members) const;
};
[[nodiscard]] LeaseCover lease_cover(const std::string& url);

// Shards per node id in `database` of a GET /v1/cluster view when every shard is owned
// exactly once there; empty otherwise.
[[nodiscard]] std::map<std::string, int> view_partition(const nlohmann::json& view,
                                                        const std::string& database);

// A node's GET /readyz: its status and each database's readiness (status 0 when the node
// does not answer).
struct Readiness {
    int status = 0;
    std::map<std::string, bool> databases;

    // Whether `database` is listed, and ready.
    [[nodiscard]] bool ready(const std::string& database) const {
        const auto found = databases.find(database);
        return found != databases.end() && found->second;
    }
};
[[nodiscard]] Readiness readiness(const NodeHandle& node);

// Nodes that serve every database of `databases` (OUTBOXD_DATABASES; one database named
// "default" is OUTBOXD_DATABASE_URL instead), and example workers, as processes of the test;
// each one's log in dir().
class MultiDatabaseCluster {
public:
    MultiDatabaseCluster(const std::string& name, std::vector<ServedDatabase> databases);

    // Starts a node on a free port without waiting. Extra env overrides the defaults.
    NodeHandle& launch_node(const std::string& name, std::map<std::string, std::string> env = {});
    // Waits until the node listens and every database is ready on it; throws with its log.
    void await_ready(NodeHandle& node,
                     std::chrono::milliseconds timeout = std::chrono::seconds{60});
    // Starts the example worker connected to `urls` with extra flags.
    Process& start_worker(const std::string& name, const std::vector<std::string>& urls,
                          const std::vector<std::string>& flags = {});

    [[nodiscard]] const std::vector<ServedDatabase>& databases() const { return databases_; }
    [[nodiscard]] const std::string& dir() const { return dir_; }

    std::deque<NodeHandle> nodes;  // deque: references stay valid as nodes are added
    std::vector<std::unique_ptr<Process>> workers;

private:
    std::vector<ServedDatabase> databases_;
    std::string dir_;
};

// What the multi-process tests do with such a cluster.

// Stages `count` rows for the example worker's `sleep` activity (`sleep_ms` each) into the
// database at `url`; their dispatch keys (`<prefix>-<n>:0`) carry the prefix, so that keys
// never repeat across databases.
void stage_sleep_rows(const std::string& url, const std::string& prefix, int count, int sleep_ms);
// Example workers w1..w<count> for the `sleep` activity, seeded with `seed`, each of `credit`
// tasks at once; their received logs (each with a timed log beside it, see first_received_ms).
std::vector<std::string> start_sleep_workers(MultiDatabaseCluster& cluster, const NodeHandle& seed,
                                             int count, int credit);
// dispatch_key -> deliveries, over the received logs of every worker.
[[nodiscard]] std::map<std::string, int> deliveries(const std::vector<std::string>& logs);
// dispatch_key -> when a worker first received it (unix ms), over the same workers' timed logs.
[[nodiscard]] std::map<std::string, std::int64_t> first_received_ms(
    const std::vector<std::string>& logs);
// Every running node has `workers` workers connected.
[[nodiscard]] bool workers_everywhere(const MultiDatabaseCluster& cluster, int workers);
// Every database's shards covered by `members` nodes in balanced shares.
[[nodiscard]] bool leases_balanced(const MultiDatabaseCluster& cluster, std::size_t members);
// Rows done in the database at `url`.
[[nodiscard]] std::int64_t done_in(const std::string& url);

}  // namespace outboxd::test
