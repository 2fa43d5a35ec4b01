#pragma once

// Commands of tests and the chaos harness that act on PostgreSQL or PgBouncer, as their
// owner: both refuse to run as root, so a root test runs them as the postgres user (and
// hands it their files).
// Main thread only: a child spawned by another thread would die with it (PR_SET_PDEATHSIG).

#include <chrono>
#include <string>
#include <vector>

namespace outboxd::test {

// `argv` as the postgres user when root (setpriv: the command stays this process's child and
// still dies with it), unchanged otherwise.
[[nodiscard]] std::vector<std::string> as_cluster_owner(std::vector<std::string> argv);
// Gives `path` to the postgres user when root. Throws std::runtime_error when it cannot.
void hand_to_cluster_owner(const std::string& path);
// Runs `argv` to completion, output appended to `log_path`; its exit code, -1 after
// `timeout`. A child process, not system(): it inherits no descriptor of the harness, so a
// server it starts never holds a proxy's socket or a test connection open.
int run_command(std::vector<std::string> argv, const std::string& log_path,
                std::chrono::seconds timeout);

}  // namespace outboxd::test
