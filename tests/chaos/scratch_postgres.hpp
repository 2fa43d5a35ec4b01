#pragma once

// The harness's own PostgreSQL: a server started with scripts/pgtmp and, for the switchover
// fault, a synchronous streaming standby of it. Faults act on whichever server is primary
// (restarted fast or immediate, stopped and started again, switched over to the standby).
// Never the shared fixture cluster of the test suite, which other tests use while this one
// runs.
//
// Servers are known by index (0: pgtmp's, 1: the standby). An index keeps its port through
// a switchover and a rebuild, so that a multi-host URL stays valid: roles move, ports stay.
//
// Main thread only (see cluster_owner.hpp).

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "pg_server.hpp"

namespace outboxd::chaos {

class ScratchPostgres {
public:
    // Starts a cluster under `dir` (pgtmp's directory: url, cluster) with `pgtmp`; command
    // output goes to files in `log_dir`. Throws std::runtime_error when it does not start.
    ScratchPostgres(std::string pgtmp, std::string dir, std::string log_dir);
    ~ScratchPostgres();  // stop()
    ScratchPostgres(const ScratchPostgres&) = delete;
    ScratchPostgres& operator=(const ScratchPostgres&) = delete;

    // Admin URL (database postgres) of the primary, on its own port.
    [[nodiscard]] std::string url() const { return servers_[primary_].url(); }
    [[nodiscard]] std::uint16_t port() const { return servers_[primary_].port(); }
    // Every server's port, by index: what a client lists to reach whichever is primary.
    [[nodiscard]] std::vector<std::uint16_t> ports() const;
    // database_url(ports()): one server's URL, or a multi-host one that follows a switchover.
    [[nodiscard]] std::string writable_url() const;
    [[nodiscard]] std::size_t primary() const { return primary_; }
    // "postgres" while there is one server; "pg-1", "pg-2" by index once there is a standby.
    [[nodiscard]] std::string name(std::size_t server) const;
    // A directory the cluster owner may write to, deleted with the cluster.
    [[nodiscard]] const std::string& owner_dir() const { return cluster_dir_; }

    // Adds server 1, a streaming standby of the primary on a free port below 32768, and has
    // the primary wait for it on every commit. Throws std::runtime_error when it fails.
    void add_standby();
    // Whether a standby is ready to take over: false once a switchover used it, until
    // rebuild_standby().
    [[nodiscard]] bool has_standby() const { return servers_.size() > 1 && !down_; }
    // The server a switchover stopped, while it is down.
    [[nodiscard]] std::optional<std::size_t> down_server() const { return down_; }

    // pg_ctl restart -m `mode` ("fast" or "immediate") of the primary, waiting until it
    // accepts connections again. Like every command below, returns false (output in
    // pg_ctl.log) when it fails.
    [[nodiscard]] bool restart(const std::string& mode);
    // pg_ctl stop -m fast of the primary; start_primary() starts it again on its port.
    [[nodiscard]] bool stop_primary();
    [[nodiscard]] bool start_primary();
    // The second half of a switchover, after stop_primary() (-m fast: what the primary
    // acknowledged is on its synchronous standby): the standby promoted. The old primary
    // stays down until rebuild_standby().
    [[nodiscard]] bool promote_standby();
    // Makes the server the last switchover stopped a synchronous standby of the new primary,
    // on its old port: a new base backup in a fresh directory (its old data has diverged).
    // Once the standby runs, the server is no longer down, even if it never becomes
    // synchronous (then false).
    [[nodiscard]] bool rebuild_standby();
    // Stops every server, copies their logs to log_dir and deletes the cluster. Idempotent.
    void stop();

private:
    // The server at `index` made a standby of the primary from a new base backup on `port`.
    [[nodiscard]] bool start_standby(std::size_t index, std::uint16_t port);
    // Has the primary wait for a standby on every commit, and waits until one is synchronous.
    [[nodiscard]] bool make_synchronous() const;

    // Where each server incarnation logs, to be copied as <name>[.<generation>].log.
    struct ServerLog {
        std::string path;
        std::size_t server = 0;
        int generation = 0;
    };

    std::string pgtmp_;
    std::string dir_;
    std::string log_dir_;
    std::string cluster_dir_;
    std::string bin_dir_;
    std::vector<PgServer> servers_;
    std::size_t primary_ = 0;
    std::optional<std::size_t> down_;
    std::vector<ServerLog> logs_;
    int data_dirs_ = 0;  // data directories created beside pgtmp's, for fresh names
    bool running_ = false;
};

}  // namespace outboxd::chaos
