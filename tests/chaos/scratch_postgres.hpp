#pragma once

// The harness's own PostgreSQL: started with scripts/pgtmp, restarted on purpose (fast or
// immediate) with the cluster's pg_ctl on the same port, stopped at the end. Never the
// shared fixture cluster of the test suite, which other tests use while this one runs.
//
// Main thread only: commands run as child processes, and a child spawned by another
// thread would die with that thread (PR_SET_PDEATHSIG).

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace outboxd::chaos {

class ScratchPostgres {
public:
    // Starts a cluster under `dir` (pgtmp's directory: url, cluster) with `pgtmp`; command
    // output goes to files in `log_dir`. Throws std::runtime_error when it does not start.
    ScratchPostgres(std::string pgtmp, std::string dir, std::string log_dir);
    ~ScratchPostgres();  // stop()
    ScratchPostgres(const ScratchPostgres&) = delete;
    ScratchPostgres& operator=(const ScratchPostgres&) = delete;

    // Admin URL (database postgres) on the server's own port.
    [[nodiscard]] const std::string& url() const { return url_; }
    [[nodiscard]] std::uint16_t port() const { return port_; }
    // The same URL through another local port (a proxy in front of the server).
    [[nodiscard]] std::string url_via(std::uint16_t port) const;

    // pg_ctl restart -m `mode` ("fast" or "immediate"), waiting until the server accepts
    // connections again. Returns false (and leaves the output in the log) when it fails.
    bool restart(const std::string& mode);
    // Copies the server log to log_dir, stops the cluster and deletes it. Idempotent.
    void stop();

private:
    // Runs argv to completion with output appended to `log_name` in log_dir; exit code.
    int run(std::vector<std::string> argv, const std::string& log_name,
            std::chrono::seconds timeout) const;
    // argv prefixed with runuser when root: PostgreSQL refuses to run as root.
    [[nodiscard]] std::vector<std::string> as_cluster_owner(std::vector<std::string> argv) const;

    std::string pgtmp_;
    std::string dir_;
    std::string log_dir_;
    std::string cluster_dir_;
    std::string pg_ctl_;
    std::string url_;
    std::uint16_t port_ = 0;
    bool running_ = false;
};

}  // namespace outboxd::chaos
