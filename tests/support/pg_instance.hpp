#pragma once

// A PostgreSQL server of a test's own, beside the suite's shared one (scripts/pgtmp): the
// same binaries, initdb'd in a directory of the test's scratch space, on a free port below
// 32768. The server runs as a child process of the test, so that it dies with the test
// however the test ends (even a crash or a kill by CTest's timeout); a test that stops it on
// purpose stops it for real (pg_ctl stop -m fast) and starts it again on the same port.
// The destructor stops it and deletes its directory, data included.
//
// Main thread only: the server dies with the thread that started it (PR_SET_PDEATHSIG).

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "process.hpp"

namespace outboxd::test {

class PgInstance {
public:
    // Initialises a cluster under `dir` (created; as root, its parents must be reachable by
    // the postgres user, as /tmp is) and starts it. Throws std::runtime_error, with the
    // server's log, when it does not start.
    // `settings` ("name=value") are given to the server after the defaults (which they
    // override: fsync, synchronous_commit and full_page_writes are off by default).
    explicit PgInstance(std::string dir, std::vector<std::string> settings = {});
    // A streaming standby of `primary` under `dir`: pg_basebackup -R of the running primary,
    // started with the same settings (hot standby: it accepts read-only sessions).
    static std::unique_ptr<PgInstance> standby_of(const PgInstance& primary, std::string dir);
    ~PgInstance();
    PgInstance(const PgInstance&) = delete;
    PgInstance& operator=(const PgInstance&) = delete;

    [[nodiscard]] std::uint16_t port() const { return port_; }
    // postgresql://postgres@127.0.0.1:<port>/<database>
    [[nodiscard]] std::string url(const std::string& database = "postgres") const;
    // pg_ctl stop -m fast: sessions are ended and the server exits; returns once it did.
    void stop();
    // Starts the stopped server again on the same port; returns once it accepts connections.
    void start();
    [[nodiscard]] bool running() const;
    // pg_ctl promote: a standby becomes a primary; returns once it takes writes.
    void promote();
    // The server's log so far (every start appends to it).
    [[nodiscard]] std::string log() const;

private:
    struct StandbyTag {};
    PgInstance(StandbyTag, const PgInstance& primary, std::string dir);
    // Creates dir_, owned by the postgres user when this process is root.
    void make_dir() const;
    // Starts the server on a free port; throws when it does not start.
    void launch_on_free_port();
    // Starts the server on port_; false when it exited before accepting connections (e.g.
    // the port was taken meanwhile).
    bool launch();
    // Runs `argv` as the cluster's owner to completion; its exit code.
    int run_as_owner(std::vector<std::string> argv, const std::string& log_name) const;

    std::string dir_;
    std::string bin_;  // the server's bin directory, as scripts/pgtmp picks it
    std::vector<std::string> settings_;
    std::uint16_t port_ = 0;
    std::unique_ptr<Process> server_;
};

}  // namespace outboxd::test
