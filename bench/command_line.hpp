#pragma once

// outboxd-bench's command line: every flag, its default and what --quick and --smoke make of
// it; --only and the scenarios --help lists come from the registry.

#include <optional>
#include <string>

#include "bench_context.hpp"
#include "scenario_registry.hpp"

namespace outboxd::bench {

struct CommandLine {
    BenchSettings settings;
    std::string json_file;
    std::string pid_file;
    bool binaries = false;  // --binaries: print what the selected scenarios start, and exit
};

// Parses argv into `command`; quick mode changes the defaults of every size option not given
// explicitly. Returns the status to exit with when the program should stop here (--help, a
// bad flag: the message is printed).
[[nodiscard]] std::optional<int> parse_command_line(int argc, char** argv,
                                                    const ScenarioRegistry& registry,
                                                    CommandLine& command);

}  // namespace outboxd::bench
