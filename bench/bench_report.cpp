#include "bench_report.hpp"

#include <unistd.h>

#include <fstream>
#include <sstream>

#include "report_format.hpp"

namespace outboxd::bench {
namespace {

const char* mode_name(const BenchSettings& settings) {
    if (settings.smoke) return "smoke";
    return settings.quick ? "quick" : "full";
}

}  // namespace

double load_average() {
    std::ifstream file{"/proc/loadavg"};
    double one_minute = 0;
    file >> one_minute;
    return one_minute;
}

MachineInfo read_machine_info(const BenchDatabases& databases) {
    MachineInfo info;
    info.cpus = static_cast<int>(::sysconf(_SC_NPROCESSORS_ONLN));
    std::ifstream cpuinfo{"/proc/cpuinfo"};
    for (std::string line; std::getline(cpuinfo, line);) {
        if (line.rfind("model name", 0) == 0) {
            info.cpu_model = line.substr(line.find(':') + 2);
            break;
        }
    }
    std::ifstream meminfo{"/proc/meminfo"};
    std::string label;
    double kib = 0;
    if (meminfo >> label >> kib) info.memory_gib = kib / (1024.0 * 1024.0);
    info.postgres_version = databases.server_version();
    info.postgres_settings = databases.durability();
    info.load_before = load_average();
    return info;
}

std::string render_table(const BenchSettings& settings, const BenchReport& report,
                         const ScenarioRegistry& registry) {
    std::ostringstream out;
    const auto& m = report.machine;
    out << "\n== outboxd benchmark (" << mode_name(settings) << ") ==\n";
    out << strf("machine: %d CPU (%s), %.1f GiB RAM; PostgreSQL %s (%s)\n", m.cpus,
                m.cpu_model.c_str(), m.memory_gib, m.postgres_version.c_str(),
                m.postgres_settings.c_str());
    const double foreign = registry.max_foreign_cpu();
    out << strf(
        "load average (1 min) %.2f at start, %.2f at end; other processes used up to %.0f%% "
        "of the machine during a throughput run%s\n",
        m.load_before, report.load_after, foreign * 100,
        foreign > kNoisyForeignShare ? " -- NOISY: the machine was shared" : "");
    out << strf(
        "N = %lld rows per throughput run, median of %d run(s); node batch %d; "
        "%d outboxd-worker process(es), max in flight %d each\n\n",
        static_cast<long long>(settings.rows), settings.repeat, settings.node_batch_size,
        settings.worker_processes, settings.worker_max_in_flight);
    out << registry.render_table(settings);
    out << strf("\nTotal benchmark time %.0f s\n", report.total_seconds);
    return out.str();
}

nlohmann::json render_json(const BenchSettings& settings, const BenchReport& report,
                           const ScenarioRegistry& registry) {
    nlohmann::json out;
    out["mode"] = mode_name(settings);
    out["rows"] = settings.rows;
    out["repeat"] = settings.repeat;
    out["node_batch_size"] = settings.node_batch_size;
    out["worker_processes"] = settings.worker_processes;
    out["machine"] = {{"cpus", report.machine.cpus},
                      {"cpu_model", report.machine.cpu_model},
                      {"memory_gib", report.machine.memory_gib},
                      {"postgres", report.machine.postgres_version},
                      {"postgres_settings", report.machine.postgres_settings},
                      {"load_before", report.machine.load_before},
                      {"load_after", report.load_after}};
    registry.add_json(out);
    out["max_foreign_cpu"] = json_fine(registry.max_foreign_cpu());
    out["total_seconds"] = json_rate(report.total_seconds);
    return out;
}

}  // namespace outboxd::bench
