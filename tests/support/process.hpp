#pragma once

// A child process for end-to-end tests: real binaries, real signals. Output goes to a log
// file; the destructor kills (SIGKILL) and reaps a child that is still running.

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <sys/types.h>

namespace outboxd::test {

class Process {
public:
    Process(std::vector<std::string> argv, const std::map<std::string, std::string>& env,
            std::string log_path);
    ~Process();
    Process(const Process&) = delete;
    Process& operator=(const Process&) = delete;

    [[nodiscard]] pid_t pid() const { return pid_; }
    void signal(int signal_number) const;
    [[nodiscard]] bool running();
    // Waits for exit; returns the exit code (128+signal when killed) or nullopt on timeout.
    std::optional<int> wait(std::chrono::milliseconds timeout);
    [[nodiscard]] std::string log() const;
    // Polls the log until it contains `text`.
    bool await_log(const std::string& text, std::chrono::milliseconds timeout);
    // How many times `text` occurs in the log so far.
    [[nodiscard]] std::size_t log_count(const std::string& text) const;
    // Resident memory and CPU time (user + system) of the running child, from /proc.
    [[nodiscard]] std::size_t rss_bytes() const;
    [[nodiscard]] double cpu_seconds() const;

private:
    pid_t pid_ = -1;
    std::optional<int> exit_code_;
    std::string log_path_;
};

// Directory of the built binaries (OUTBOXD_BIN_DIR, set by CTest).
[[nodiscard]] std::string bin_dir();
// A fresh per-test scratch directory under the build tree or /tmp.
[[nodiscard]] std::string scratch_dir(const std::string& name);

}  // namespace outboxd::test
