#pragma once

// The report of one benchmark run: the driver's own part (the machine, the load, the run's
// span) around the scenarios' parts (ScenarioRegistry), as a table for people (stdout) and
// one JSON object for tools (the last line of stdout, optionally a file).

#include <string>

#include <nlohmann/json.hpp>

#include "bench_context.hpp"
#include "scenario_registry.hpp"

namespace outboxd::bench {

struct MachineInfo {
    int cpus = 0;
    std::string cpu_model;
    double memory_gib = 0;
    std::string postgres_version;
    std::string postgres_settings;
    double load_before = 0;  // 1-minute load average when the run started
};

struct BenchReport {
    MachineInfo machine;
    double total_seconds = 0;
    double load_after = 0;  // 1-minute load average when it ended
};

[[nodiscard]] double load_average();

[[nodiscard]] MachineInfo read_machine_info(const BenchDatabases& databases);

[[nodiscard]] std::string render_table(const BenchSettings& settings, const BenchReport& report,
                                       const ScenarioRegistry& registry);
[[nodiscard]] nlohmann::json render_json(const BenchSettings& settings, const BenchReport& report,
                                         const ScenarioRegistry& registry);

}  // namespace outboxd::bench
