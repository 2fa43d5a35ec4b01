#include "process.hpp"

#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace outboxd::test {

Process::Process(std::vector<std::string> argv, const std::map<std::string, std::string>& env,
                 std::string log_path)
    : log_path_(std::move(log_path)) {
    std::map<std::string, std::string> merged;
    for (char** e = environ; *e; ++e) {
        const std::string entry{*e};
        const auto eq = entry.find('=');
        if (eq != std::string::npos) merged[entry.substr(0, eq)] = entry.substr(eq + 1);
    }
    for (const auto& [key, value] : env) merged[key] = value;
    std::vector<std::string> env_strings;
    for (const auto& [key, value] : merged) env_strings.push_back(key + "=" + value);

    std::vector<char*> c_argv;
    for (auto& a : argv) c_argv.push_back(a.data());
    c_argv.push_back(nullptr);
    std::vector<char*> c_env;
    for (auto& e : env_strings) c_env.push_back(e.data());
    c_env.push_back(nullptr);

    const int log_fd = ::open(log_path_.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (log_fd < 0) throw std::runtime_error("cannot open " + log_path_);
    pid_ = ::fork();
    if (pid_ < 0) throw std::runtime_error("fork failed");
    if (pid_ == 0) {
        // Die with the test process even when it crashes before its destructors run.
        ::prctl(PR_SET_PDEATHSIG, SIGKILL);
        ::dup2(log_fd, STDOUT_FILENO);
        ::dup2(log_fd, STDERR_FILENO);
        const int null_fd = ::open("/dev/null", O_RDONLY);
        ::dup2(null_fd, STDIN_FILENO);
        // Nothing else of the test process leaks into the child (sockets of a proxy or a
        // database connection would otherwise stay open as long as the child lives).
        for (int fd = 3, last = static_cast<int>(::sysconf(_SC_OPEN_MAX)); fd < last && fd < 65536;
             ++fd) {
            ::close(fd);
        }
        ::execve(c_argv[0], c_argv.data(), c_env.data());
        std::fprintf(stderr, "exec %s failed: %s\n", c_argv[0], std::strerror(errno));
        ::_exit(127);
    }
    ::close(log_fd);
}

Process::~Process() {
    if (running()) {
        ::kill(pid_, SIGKILL);
        wait(std::chrono::seconds{10});
    }
}

void Process::signal(int signal_number) const {
    if (pid_ > 0) ::kill(pid_, signal_number);
}

bool Process::running() {
    if (exit_code_ || pid_ <= 0) return false;
    int status = 0;
    const pid_t r = ::waitpid(pid_, &status, WNOHANG);
    if (r == 0) return true;
    if (r == pid_) {
        exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    }
    return false;
}

std::optional<int> Process::wait(std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (running()) {
        if (std::chrono::steady_clock::now() > deadline) return std::nullopt;
        std::this_thread::sleep_for(std::chrono::milliseconds{10});
    }
    return exit_code_;
}

std::string Process::log() const {
    std::ifstream in{log_path_};
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
}

bool Process::await_log(const std::string& text, std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (log().find(text) == std::string::npos) {
        if (std::chrono::steady_clock::now() > deadline) return false;
        std::this_thread::sleep_for(std::chrono::milliseconds{20});
    }
    return true;
}

std::size_t Process::log_count(const std::string& text) const {
    const std::string all = log();
    std::size_t count = 0;
    for (auto at = all.find(text); at != std::string::npos; at = all.find(text, at + text.size())) {
        ++count;
    }
    return count;
}

std::size_t Process::rss_bytes() const {
    std::ifstream in{"/proc/" + std::to_string(pid_) + "/statm"};
    std::size_t pages = 0;
    std::size_t resident = 0;
    in >> pages >> resident;
    return resident * static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
}

double Process::cpu_seconds() const {
    std::ifstream in{"/proc/" + std::to_string(pid_) + "/stat"};
    std::string text{std::istreambuf_iterator<char>{in}, {}};
    // Fields after the command name, which is in parentheses and may hold spaces.
    std::istringstream fields{text.substr(text.rfind(')') + 2)};
    std::string field;
    double ticks = 0;
    for (int i = 3; fields >> field; ++i) {
        if (i == 14 || i == 15) ticks += std::stod(field);  // utime, stime
        if (i == 15) break;
    }
    return ticks / static_cast<double>(::sysconf(_SC_CLK_TCK));
}

std::string bin_dir() {
    if (const char* dir = std::getenv("OUTBOXD_BIN_DIR"); dir && *dir) return dir;
    // Test binaries are built next to outboxd and outboxd-worker.
    return std::filesystem::read_symlink("/proc/self/exe").parent_path().string();
}

std::string scratch_dir(const std::string& name) {
    const char* base = std::getenv("OUTBOXD_TEST_SCRATCH");
    const std::filesystem::path root =
        base && *base ? base : std::filesystem::temp_directory_path();
    auto dir = root / ("outboxd-" + name + "-" + std::to_string(::getpid()));
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    return dir.string();
}

}  // namespace outboxd::test
