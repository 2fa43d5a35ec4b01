#include "child_process.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <deque>
#include <fstream>
#include <stdexcept>
#include <thread>

extern char** environ;

namespace outboxd::bench {
namespace {

// The signal handler can only read plain memory: a fixed table of lock-free slots. A
// process-wide table is the point here, hence no injection.
constexpr std::size_t kMaxChildren = 64;
std::array<std::atomic<pid_t>, kMaxChildren> g_children{};
std::string g_pid_file;

void register_child(pid_t pid) {
    for (auto& slot : g_children) {
        pid_t empty = 0;
        if (slot.compare_exchange_strong(empty, pid)) break;
    }
    if (!g_pid_file.empty()) {
        std::ofstream file{g_pid_file, std::ios::app};
        file << pid << "\n";
    }
}

void unregister_child(pid_t pid) {
    for (auto& slot : g_children) {
        pid_t expected = pid;
        if (slot.compare_exchange_strong(expected, 0)) break;
    }
}

extern "C" void kill_children_and_exit(int signal) {
    for (auto& slot : g_children) {
        const pid_t pid = slot.load();
        if (pid > 0) ::kill(pid, SIGKILL);
    }
    ::_exit(128 + signal);
}

std::vector<std::string> merged_environment(
    const std::vector<std::pair<std::string, std::string>>& overrides) {
    std::vector<std::string> result;
    for (char** entry = environ; *entry != nullptr; ++entry) {
        const std::string item{*entry};
        const auto key = item.substr(0, item.find('='));
        bool overridden = false;
        for (const auto& [name, value] : overrides) overridden = overridden || name == key;
        if (!overridden) result.push_back(item);
    }
    for (const auto& [name, value] : overrides) result.emplace_back(name).append("=").append(value);
    return result;
}

std::vector<char*> pointers(std::vector<std::string>& strings) {
    std::vector<char*> result;
    for (auto& s : strings) result.push_back(s.data());
    result.push_back(nullptr);
    return result;
}

}  // namespace

void set_child_pid_file(std::string path) { g_pid_file = std::move(path); }

void install_child_reaper_signals() {
    struct sigaction action {};
    action.sa_handler = kill_children_and_exit;
    sigemptyset(&action.sa_mask);
    for (const int signal : {SIGINT, SIGTERM, SIGHUP}) ::sigaction(signal, &action, nullptr);
}

ChildProcess::ChildProcess(const ChildSpec& spec) : log_path_(spec.log_path) {
    if (spec.argv.empty()) throw std::invalid_argument{"ChildProcess: empty argv"};
    name_ = spec.argv.front().substr(spec.argv.front().rfind('/') + 1);
    // Everything the child needs is prepared before fork: after it only async-signal-safe
    // calls are allowed (the driver has threads).
    auto argv_strings = spec.argv;
    auto env_strings = merged_environment(spec.env);
    auto argv = pointers(argv_strings);
    auto envp = pointers(env_strings);
    const pid_t parent = ::getpid();
    const int log_fd =
        ::open(spec.log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (log_fd < 0) throw std::runtime_error{"cannot open log file " + spec.log_path};
    const int null_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    int exec_pipe[2];  // closes on a successful exec; carries errno when exec fails
    if (::pipe2(exec_pipe, O_CLOEXEC) != 0) {
        ::close(log_fd);
        ::close(null_fd);
        throw std::runtime_error{"pipe2 failed"};
    }
    pid_ = ::fork();
    if (pid_ == 0) {
        ::prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (::getppid() != parent) ::_exit(127);  // the driver died before prctl
        ::dup2(null_fd, STDIN_FILENO);
        ::dup2(log_fd, STDOUT_FILENO);
        ::dup2(log_fd, STDERR_FILENO);
        sigset_t none;
        sigemptyset(&none);
        ::sigprocmask(SIG_SETMASK, &none, nullptr);
        for (const int signal : {SIGINT, SIGTERM, SIGHUP}) ::signal(signal, SIG_DFL);
        ::execve(argv[0], argv.data(), envp.data());
        const int error = errno;
        [[maybe_unused]] const auto written = ::write(exec_pipe[1], &error, sizeof error);
        ::_exit(127);
    }
    ::close(exec_pipe[1]);
    ::close(log_fd);
    ::close(null_fd);
    if (pid_ < 0) {
        ::close(exec_pipe[0]);
        throw std::runtime_error{"fork failed: " + std::string{std::strerror(errno)}};
    }
    register_child(pid_);
    int error = 0;
    const auto got = ::read(exec_pipe[0], &error, sizeof error);
    ::close(exec_pipe[0]);
    if (got == static_cast<ssize_t>(sizeof error)) {
        int status = 0;
        ::waitpid(pid_, &status, 0);
        unregister_child(pid_);
        pid_ = -1;
        throw std::runtime_error{"cannot run " + spec.argv.front() + ": " + std::strerror(error)};
    }
}

ChildProcess::~ChildProcess() {
    if (pid_ > 0 && !exit_code_) stop(kStopGrace);
}

void ChildProcess::reaped(int status) {
    exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    unregister_child(pid_);
}

bool ChildProcess::alive() {
    if (exit_code_) return false;
    int status = 0;
    const pid_t done = ::waitpid(pid_, &status, WNOHANG);
    if (done == pid_) {
        reaped(status);
        return false;
    }
    return true;
}

int ChildProcess::stop(std::chrono::milliseconds grace) {
    if (!alive()) return *exit_code_;
    ::kill(pid_, SIGTERM);
    const auto deadline = std::chrono::steady_clock::now() + grace;
    while (std::chrono::steady_clock::now() < deadline) {
        if (!alive()) return *exit_code_;
        std::this_thread::sleep_for(std::chrono::milliseconds{20});
    }
    ::kill(pid_, SIGKILL);
    int status = 0;
    ::waitpid(pid_, &status, 0);
    reaped(status);
    return *exit_code_;
}

std::string ChildProcess::log_tail(std::size_t lines) const {
    std::ifstream file{log_path_};
    std::deque<std::string> tail;
    for (std::string line; std::getline(file, line);) {
        tail.push_back(line);
        if (tail.size() > lines) tail.pop_front();
    }
    std::string result;
    for (const auto& line : tail) result += "    " + line + "\n";
    return result;
}

}  // namespace outboxd::bench
