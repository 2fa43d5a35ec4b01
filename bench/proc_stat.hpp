#pragma once

// CPU accounting from /proc, for the cost columns of the benchmark (seconds of CPU per
// 10k rows). Linux only. Readers never throw: a process that is gone reads as nullopt.

#include <sys/types.h>

#include <optional>
#include <string>

namespace outboxd::bench {

struct ProcessTimes {
    double self_s = 0;      // utime + stime
    double children_s = 0;  // cutime + cstime: children it has reaped
    pid_t parent = 0;
};

[[nodiscard]] std::optional<ProcessTimes> read_process_times(pid_t pid);

// CPU seconds (self and reaped children) of the live children of `parent`.
[[nodiscard]] double children_cpu_seconds(pid_t parent);

// CPU seconds a process has used so far (utime + stime); 0 when it is gone.
[[nodiscard]] double process_cpu_seconds(pid_t pid);

// CPU seconds of a whole PostgreSQL cluster so far: the postmaster, the backends and
// auxiliary processes alive now, and every child it has already reaped (cutime/cstime), so
// a backend that exits between two samples is still counted.
class PgClusterCpu {
public:
    // `data_dir` is the cluster's data directory (its postmaster.pid names the postmaster).
    // Empty: the cluster is not on this machine and every sample reads 0.
    explicit PgClusterCpu(const std::string& data_dir);
    [[nodiscard]] bool available() const { return postmaster_ > 0; }
    [[nodiscard]] double sample() const;

private:
    pid_t postmaster_ = 0;
};

// The whole machine from /proc/stat, to tell a CPU-bound run and a shared machine.
// busy_s counts user, nice, system and steal time (not interrupts, which serve whoever
// does I/O); kernel_threads_s is what kernel threads (writeback, journaling: work our own
// fsyncs cause) have used, read from /proc/PID/stat of kthreadd's children.
struct HostCpu {
    double busy_s = 0;
    double total_s = 0;
    double kernel_threads_s = 0;
};
[[nodiscard]] HostCpu read_host_cpu();
// Fraction of the machine's CPU capacity that was busy between two samples (0..1).
[[nodiscard]] double busy_fraction(const HostCpu& before, const HostCpu& after);
// Share of the machine's capacity between two samples that neither `own_s` CPU seconds
// (the processes a scenario accounts for) nor kernel threads explain: other work on a
// shared machine (or time the hypervisor stole).
[[nodiscard]] double foreign_share(const HostCpu& before, const HostCpu& after, double own_s);

}  // namespace outboxd::bench
