#include "scenario_registry.hpp"

#include <unistd.h>

#include <algorithm>
#include <filesystem>

namespace outboxd::bench {

ScenarioRegistry::ScenarioRegistry(std::vector<std::unique_ptr<Scenario>> scenarios,
                                   std::vector<TableGroup> layout)
    : scenarios_(std::move(scenarios)), layout_(std::move(layout)) {
    std::set<std::string_view> names;
    for (const auto& scenario : scenarios_) {
        if (!names.insert(scenario->name()).second) {
            throw std::logic_error{"two scenarios named " + std::string{scenario->name()}};
        }
    }
    for (const auto& scenario : scenarios_) {
        const auto needs = scenario->needs();
        for (const auto need : needs) {
            if (!names.contains(need)) {
                throw std::logic_error{std::string{scenario->name()} + " needs " +
                                       std::string{need} + ", which is not listed"};
            }
        }
        const auto leader = scenario->follows();
        if (!leader.empty() && std::find(needs.begin(), needs.end(), leader) == needs.end()) {
            throw std::logic_error{std::string{scenario->name()} + " follows " +
                                   std::string{leader} + ", which it does not need"};
        }
    }
    select({});
}

std::vector<std::string> ScenarioRegistry::names() const {
    std::vector<std::string> out;
    for (const auto& scenario : scenarios_) out.emplace_back(scenario->name());
    return out;
}

const Scenario* ScenarioRegistry::find(std::string_view name) const {
    for (const auto& scenario : scenarios_) {
        if (scenario->name() == name) return scenario.get();
    }
    return nullptr;
}

void ScenarioRegistry::select(const std::vector<std::string>& only) {
    selected_.clear();
    for (const auto& name : only) {
        if (!find(name)) throw std::invalid_argument{"no scenario named " + name};
        selected_.insert(name);
    }
    if (only.empty()) {
        for (const auto& scenario : scenarios_) selected_.emplace(scenario->name());
    }
    // What the selected ones need, and what that needs in turn.
    running_ = selected_;
    for (std::size_t before = 0; before != running_.size();) {
        before = running_.size();
        for (const auto& scenario : scenarios_) {
            if (!runs(*scenario)) continue;
            for (const auto need : scenario->needs()) running_.emplace(need);
        }
    }
}

bool ScenarioRegistry::selected(const Scenario& scenario) const {
    return selected_.contains(scenario.name());
}

bool ScenarioRegistry::runs(const Scenario& scenario) const {
    return running_.contains(scenario.name());
}

std::vector<std::string> ScenarioRegistry::binaries() const {
    std::vector<std::string> out;
    for (const auto& scenario : scenarios_) {
        if (!runs(*scenario)) continue;
        for (const auto binary : scenario->binaries()) {
            if (std::find(out.begin(), out.end(), binary) == out.end()) out.emplace_back(binary);
        }
    }
    return out;
}

std::optional<std::string> ScenarioRegistry::missing_binary(const std::string& bin_dir) const {
    const auto needed = binaries();
    const auto missing = std::find_if(needed.begin(), needed.end(), [&](const auto& binary) {
        const auto path = std::filesystem::path{bin_dir} / binary;
        std::error_code error;
        return !std::filesystem::is_regular_file(path, error) || ::access(path.c_str(), X_OK) != 0;
    });
    if (missing == needed.end()) return std::nullopt;
    std::string users;
    for (const auto& scenario : scenarios_) {
        const auto named = scenario->binaries();
        if (runs(*scenario) && std::find(named.begin(), named.end(), *missing) != named.end()) {
            users += (users.empty() ? "" : ", ") + std::string{scenario->name()};
        }
    }
    return "--bin-dir " + bin_dir + " has no executable " + *missing + " (build the CMake target " +
           *missing + "), which these scenarios start: " + users;
}

void ScenarioRegistry::run(const BenchContext& context) {
    for (int repetition = 1; repetition <= context.settings.repeat; ++repetition) {
        for (const auto& scenario : scenarios_) {
            if (runs(*scenario) && scenario->follows().empty()) {
                repeat(*scenario, context, repetition);
            }
        }
    }
    for (const auto& scenario : scenarios_) {
        if (runs(*scenario)) scenario->once(Turn{context, 0, selected(*scenario), [] {}});
    }
}

void ScenarioRegistry::repeat(Scenario& scenario, const BenchContext& context, int repetition) {
    std::vector<Scenario*> followers;
    for (const auto& follower : scenarios_) {
        if (runs(*follower) && follower->follows() == scenario.name()) {
            followers.push_back(follower.get());
        }
    }
    int calls = 0;
    const auto run_followers = [&] {
        ++calls;
        for (auto* follower : followers) repeat(*follower, context, repetition);
    };
    scenario.repeat(Turn{context, repetition, selected(scenario), run_followers});
    if (!followers.empty() && calls != 1) {
        throw std::logic_error{std::string{scenario.name()} + " ran its followers " +
                               std::to_string(calls) + " times in a repetition, not once"};
    }
}

std::string ScenarioRegistry::render_table(const BenchSettings& settings) const {
    ReportTable table{layout_};
    for (const auto& scenario : scenarios_) scenario->render_table(settings, *this, table);
    return table.render();
}

void ScenarioRegistry::add_json(nlohmann::json& out) const {
    for (const auto& scenario : scenarios_) scenario->add_json(*this, out);
}

double ScenarioRegistry::max_foreign_cpu() const {
    double most = 0;
    for (const auto& scenario : scenarios_) most = std::max(most, scenario->max_foreign_cpu());
    return most;
}

}  // namespace outboxd::bench
