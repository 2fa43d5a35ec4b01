#pragma once

// The registry of outboxd-bench: every scenario and the table's layout (scenario_list.cpp).

#include "scenario_registry.hpp"

namespace outboxd::bench {

[[nodiscard]] ScenarioRegistry make_scenario_registry();

}  // namespace outboxd::bench
