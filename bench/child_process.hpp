#pragma once

// Child processes of the benchmark (outboxd nodes, outboxd-worker processes).
//
// Every child gets PR_SET_PDEATHSIG(SIGKILL), so it dies with the driver whatever kills
// the driver, and is listed in a process-wide table that the driver's SIGINT/SIGTERM
// handler kills (install_child_reaper_signals) and in the optional pid file that
// scripts/bench's exit trap reads. Not thread-safe: spawn and stop from the driver's main
// thread (the death signal fires when the *thread* that forked ends, so it must live).

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace outboxd::bench {

struct ChildSpec {
    std::vector<std::string> argv;                         // argv[0] is the executable path
    std::vector<std::pair<std::string, std::string>> env;  // set on top of the driver's
    std::string log_path;                                  // stdout and stderr, appended
};

class ChildProcess {
public:
    // Throws std::runtime_error when the process cannot be started (fork or exec failed).
    explicit ChildProcess(const ChildSpec& spec);
    ~ChildProcess();  // stop(kStopGrace) when still running
    ChildProcess(const ChildProcess&) = delete;
    ChildProcess& operator=(const ChildProcess&) = delete;

    [[nodiscard]] pid_t pid() const { return pid_; }
    [[nodiscard]] const std::string& log_path() const { return log_path_; }
    [[nodiscard]] const std::string& name() const { return name_; }

    // False once the process has exited (and reaps it).
    [[nodiscard]] bool alive();
    // SIGTERM, then SIGKILL once `grace` has passed. Returns the exit code, or 128 + signal.
    int stop(std::chrono::milliseconds grace);

    // The last `lines` lines of its log, for error messages.
    [[nodiscard]] std::string log_tail(std::size_t lines) const;

    static constexpr std::chrono::milliseconds kStopGrace{10000};

private:
    void reaped(int status);

    pid_t pid_ = -1;
    std::optional<int> exit_code_;
    std::string log_path_;
    std::string name_;
};

// Where the pids of children are appended, one a line (scripts/bench kills those still
// running on exit). Empty: none.
void set_child_pid_file(std::string path);

// SIGINT, SIGTERM and SIGHUP kill every live child with SIGKILL and end the driver with
// 128 + signal. Install once, before the first child starts.
void install_child_reaper_signals();

}  // namespace outboxd::bench
