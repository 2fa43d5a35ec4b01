#pragma once

// A PgBouncer (Debian's /usr/sbin/pgbouncer) in front of one PostgreSQL, for tests: every
// database name goes to that server, trust authentication for the postgres user, listening
// on a free 127.0.0.1 port. Run as the postgres user when the test runs as root (PgBouncer
// refuses root); it dies with the test.

#include <cstdint>
#include <memory>
#include <string>

#include "process.hpp"

namespace outboxd::test {

class PgBouncer {
public:
    // `pool_mode`: "session" or "transaction". Starts and waits until it accepts connections.
    PgBouncer(std::string dir, std::uint16_t server_port, std::string pool_mode = "session");
    ~PgBouncer();
    PgBouncer(const PgBouncer&) = delete;
    PgBouncer& operator=(const PgBouncer&) = delete;

    [[nodiscard]] std::uint16_t port() const { return port_; }
    // postgresql://postgres@127.0.0.1:<port>/<database>
    [[nodiscard]] std::string url(const std::string& database) const;
    // Points every database at another server (config rewritten, SIGHUP): new server
    // connections go there; connections to the old one close once their clients let go.
    void retarget(std::uint16_t server_port);
    // SIGTERM (immediate shutdown, every client cut at once), then started again on the same
    // port. Returns whether it serves sessions again.
    [[nodiscard]] bool restart();
    [[nodiscard]] std::string log() const;

private:
    void write_config() const;
    void launch();

    std::string dir_;
    std::uint16_t server_port_;
    std::string pool_mode_;
    std::uint16_t port_ = 0;
    std::unique_ptr<Process> process_;
};

}  // namespace outboxd::test
