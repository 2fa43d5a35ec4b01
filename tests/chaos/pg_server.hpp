#pragma once

// One PostgreSQL server of a chaos run, driven with pg_ctl and pg_basebackup as the cluster
// owner. pg_ctl runs it detached, so that a restart keeps its port and its options; which
// server is primary is ScratchPostgres's business. Every command's output is appended to
// pg_ctl.log in the log directory; each returns whether it worked.
//
// Main thread only (see cluster_owner.hpp).

#include <cstdint>
#include <string>
#include <vector>

namespace outboxd::chaos {

class PgServer {
public:
    // `bin_dir` holds pg_ctl and pg_basebackup; `data_dir` and `server_log` lie where the
    // cluster owner can write.
    PgServer(std::string bin_dir, std::string data_dir, std::string server_log, std::uint16_t port,
             std::string log_dir);

    [[nodiscard]] std::uint16_t port() const { return port_; }
    [[nodiscard]] const std::string& data_dir() const { return data_dir_; }
    [[nodiscard]] const std::string& server_log() const { return server_log_; }
    // Admin URL (database postgres) on this server's own port.
    [[nodiscard]] std::string url() const;

    // pg_basebackup -R -X stream -c fast from the server on `primary_port` into the data
    // directory, which must not exist yet: started, it is a streaming standby of that server.
    [[nodiscard]] bool clone_from(std::uint16_t primary_port) const;
    // pg_ctl start with `options` (postgres options, without the port) on this port.
    [[nodiscard]] bool start(const std::string& options) const;
    // pg_ctl restart -m `mode`: the same port and options as the last start (postmaster.opts).
    // A stopped server is started that way.
    [[nodiscard]] bool restart(const std::string& mode) const;
    [[nodiscard]] bool stop(const std::string& mode) const;
    // pg_ctl promote, waiting until the server takes writes.
    [[nodiscard]] bool promote() const;

private:
    [[nodiscard]] bool pg_ctl(std::vector<std::string> args) const;

    std::string bin_dir_;
    std::string data_dir_;
    std::string server_log_;
    std::uint16_t port_;
    std::string log_dir_;
};

}  // namespace outboxd::chaos
