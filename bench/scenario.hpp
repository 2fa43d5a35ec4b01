#pragma once

// A benchmark scenario: what `--only` selects. Each is one class in its own *_scenario
// .hpp/.cpp pair, listed once in scenario_list.cpp. It names the binaries it starts, makes
// its runs when the registry calls its hooks, keeps their results and writes its own part
// of the report; another scenario reads those through the registry (ScenarioRegistry::get).
//
// Driver thread only: the registry calls one hook at a time. A run hook throws
// std::exception when a run fails; the benchmark then stops and reports what ran.

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench_context.hpp"
#include "report_table.hpp"

namespace outboxd::bench {

class ScenarioRegistry;

// What a run hook gets.
struct Turn {
    const BenchContext& context;
    int repetition = 0;    // 1 … settings.repeat in Scenario::repeat; 0 in Scenario::once
    bool selected = true;  // false: it runs only because a selected scenario needs() it
    // Runs the repeat() of the scenarios that follow this one (Scenario::follows); a no-op
    // when none does, and in once().
    std::function<void()> run_followers;

    [[nodiscard]] const BenchSettings& settings() const { return context.settings; }
    // "_r<repetition>": what the runs of one repetition add to their tags.
    [[nodiscard]] std::string suffix() const { return "_r" + std::to_string(repetition); }
};

class Scenario {
public:
    Scenario() = default;
    virtual ~Scenario() = default;
    Scenario(const Scenario&) = delete;
    Scenario& operator=(const Scenario&) = delete;

    // The --only key (each scenario class also has it as kName, for ScenarioRegistry::get).
    [[nodiscard]] virtual std::string_view name() const = 0;
    // One line of --help.
    [[nodiscard]] virtual std::string_view description() const = 0;
    // The executables it starts from --bin-dir, each the CMake target of that name. The
    // driver checks them before anything runs; scripts/bench builds them.
    [[nodiscard]] virtual std::vector<std::string_view> binaries() const = 0;
    // Scenarios whose baseline run this one divides by: selecting this one runs them too,
    // with Turn::selected false, and then they make their baseline run only.
    [[nodiscard]] virtual std::vector<std::string_view> needs() const { return {}; }
    // One of needs(), or empty. Set: each repetition runs this one right after that
    // scenario's baseline run (there it calls Turn::run_followers, exactly once), not at its
    // own place in the list, so that a ratio divides runs made a minute apart.
    [[nodiscard]] virtual std::string_view follows() const { return {}; }

    // Once per repetition (--repeat), the scenarios taking turns, so that drift of a shared
    // machine hits each one's runs alike and a ratio pairs runs of the same repetition.
    virtual void repeat(const Turn& /*turn*/) {}
    // Once, after every repetition.
    virtual void once(const Turn& /*turn*/) {}

    // Its parts of the table (ReportTable::put; the layout in scenario_list.cpp places them,
    // its name keying its main part) and its keys of the JSON object. Called for every listed
    // scenario, whether it ran or not: with no runs it puts no part, and its headline keys
    // are there all the same, null. `registry` has the other scenarios' results.
    virtual void render_table(const BenchSettings& settings, const ScenarioRegistry& registry,
                              ReportTable& table) const = 0;
    virtual void add_json(const ScenarioRegistry& registry, nlohmann::json& out) const = 0;
    // The largest share of the machine other processes used during one of its throughput
    // runs (the report flags a shared machine by it); 0 where it is not measured.
    [[nodiscard]] virtual double max_foreign_cpu() const { return 0; }
};

}  // namespace outboxd::bench
