#include "proc_stat.hpp"

#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace outboxd::bench {
namespace {

double ticks_per_second() {
    static const double ticks = static_cast<double>(::sysconf(_SC_CLK_TCK));
    return ticks;
}

}  // namespace

std::optional<ProcessTimes> read_process_times(pid_t pid) {
    std::ifstream file{"/proc/" + std::to_string(pid) + "/stat"};
    std::string text;
    if (!file || !std::getline(file, text)) return std::nullopt;
    // The command name (field 2) may hold spaces and parentheses: fields resume after the
    // last ')'. Then: 3 state, 4 ppid, ... 14 utime, 15 stime, 16 cutime, 17 cstime.
    const auto close = text.rfind(')');
    if (close == std::string::npos) return std::nullopt;
    std::istringstream fields{text.substr(close + 1)};
    std::vector<std::string> values;
    for (std::string value; fields >> value && values.size() < 15;) values.push_back(value);
    if (values.size() < 15) return std::nullopt;
    const auto field = [&values](int number) {
        return std::strtod(values[static_cast<std::size_t>(number - 3)].c_str(), nullptr);
    };
    ProcessTimes times;
    times.parent = static_cast<pid_t>(field(4));
    times.self_s = (field(14) + field(15)) / ticks_per_second();
    times.children_s = (field(16) + field(17)) / ticks_per_second();
    return times;
}

double process_cpu_seconds(pid_t pid) {
    const auto times = read_process_times(pid);
    return times ? times->self_s : 0.0;
}

PgClusterCpu::PgClusterCpu(const std::string& data_dir) {
    if (data_dir.empty()) return;
    std::ifstream file{data_dir + "/postmaster.pid"};
    long pid = 0;
    if (file >> pid) postmaster_ = static_cast<pid_t>(pid);
}

double PgClusterCpu::sample() const {
    if (postmaster_ <= 0) return 0.0;
    const auto root = read_process_times(postmaster_);
    if (!root) return 0.0;
    return root->self_s + root->children_s + children_cpu_seconds(postmaster_);
}

double children_cpu_seconds(pid_t parent) {
    double total = 0;
    DIR* proc = ::opendir("/proc");
    if (proc == nullptr) return total;
    while (const dirent* entry = ::readdir(proc)) {
        char* end = nullptr;
        const long pid = std::strtol(entry->d_name, &end, 10);
        if (end == entry->d_name || *end != '\0') continue;
        const auto times = read_process_times(static_cast<pid_t>(pid));
        if (times && times->parent == parent) total += times->self_s + times->children_s;
    }
    ::closedir(proc);
    return total;
}

HostCpu read_host_cpu() {
    std::ifstream file{"/proc/stat"};
    std::string label;
    double user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0;
    if (!(file >> label >> user >> nice >> system >> idle >> iowait >> irq >> softirq >> steal)) {
        return {};
    }
    constexpr pid_t kKthreadd = 2;
    const double busy = user + nice + system + steal;
    return {busy / ticks_per_second(), (busy + idle + iowait + irq + softirq) / ticks_per_second(),
            children_cpu_seconds(kKthreadd)};
}

double busy_fraction(const HostCpu& before, const HostCpu& after) {
    const double total = after.total_s - before.total_s;
    return total > 0 ? (after.busy_s - before.busy_s) / total : 0.0;
}

double foreign_share(const HostCpu& before, const HostCpu& after, double own_s) {
    const double total = after.total_s - before.total_s;
    if (total <= 0) return 0.0;
    const double kernel = after.kernel_threads_s - before.kernel_threads_s;
    return std::max(0.0, (after.busy_s - before.busy_s - kernel - own_s) / total);
}

}  // namespace outboxd::bench
