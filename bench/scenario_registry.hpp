#pragma once

// The scenarios of outboxd-bench, in run order, and the table's layout (both from
// scenario_list.cpp); which of them a run makes: the selected ones (--only; all by default)
// and the ones those need. It runs their hooks, names the binaries they start and gathers
// their parts of the report. A scenario reads another's results through it, by name.
// Driver thread only.

#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench_context.hpp"
#include "report_table.hpp"
#include "scenario.hpp"

namespace outboxd::bench {

class ScenarioRegistry {
public:
    // Throws std::logic_error when two scenarios share a name, or one needs or follows a
    // scenario that is not listed: a mistake in the list, not in the command line.
    ScenarioRegistry(std::vector<std::unique_ptr<Scenario>> scenarios,
                     std::vector<TableGroup> layout);

    [[nodiscard]] const std::vector<std::unique_ptr<Scenario>>& scenarios() const {
        return scenarios_;
    }
    [[nodiscard]] std::vector<std::string> names() const;

    // Selects the scenarios named in `only` (empty: all) and, with them, what they need.
    // Throws std::invalid_argument for a name not listed.
    void select(const std::vector<std::string>& only);
    [[nodiscard]] bool selected(const Scenario& scenario) const;
    // Selected, or needed by a selected one.
    [[nodiscard]] bool runs(const Scenario& scenario) const;

    // The binaries the scenarios that run start, each once, in list order.
    [[nodiscard]] std::vector<std::string> binaries() const;
    // A message naming the first of those that is not an executable file in `bin_dir` and the
    // scenarios that start it; none when every one is there.
    [[nodiscard]] std::optional<std::string> missing_binary(const std::string& bin_dir) const;

    // Every repetition, the repeat() of the scenarios that run, in list order (a follower
    // after its leader's baseline run); then their once(), in list order. Throws what a run
    // throws, and std::logic_error when a leader did not run its followers.
    void run(const BenchContext& context);

    // The table's parts of every scenario, in the layout.
    [[nodiscard]] std::string render_table(const BenchSettings& settings) const;
    // Every scenario's keys.
    void add_json(nlohmann::json& out) const;
    // The most over every scenario (Scenario::max_foreign_cpu).
    [[nodiscard]] double max_foreign_cpu() const;

    // The listed scenario named T::kName; nullptr when there is none.
    template <typename T>
    [[nodiscard]] const T* find() const {
        const auto* scenario = find(T::kName);
        return scenario ? dynamic_cast<const T*>(scenario) : nullptr;
    }
    // The same for one that must be listed (one of the caller's needs()).
    template <typename T>
    [[nodiscard]] const T& get() const {
        const auto* scenario = find<T>();
        if (!scenario) throw std::logic_error{"scenario " + std::string{T::kName} + " not listed"};
        return *scenario;
    }

private:
    [[nodiscard]] const Scenario* find(std::string_view name) const;
    void repeat(Scenario& scenario, const BenchContext& context, int repetition);

    std::vector<std::unique_ptr<Scenario>> scenarios_;
    std::vector<TableGroup> layout_;
    std::set<std::string, std::less<>> selected_;
    std::set<std::string, std::less<>> running_;
};

}  // namespace outboxd::bench
