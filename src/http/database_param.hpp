#pragma once

// `?database=` of an API request (README, "HTTP API"): checked, then looked up among the
// databases the node serves, as the route's Databases says. Decided here once, for every
// route, before its handler runs. Never throws. Loop thread only.

#include <string_view>
#include <variant>
#include <vector>

#include "api_types.hpp"
#include "outboxd/engine/engine_directory.hpp"
#include "route_table.hpp"

namespace outboxd::http {

// The query parameter.
inline constexpr std::string_view kDatabaseParam = "database";

// Whether `name` can name a database: [a-z0-9_-]{1,32}, as OUTBOXD_DATABASES names them.
[[nodiscard]] bool is_database_name(std::string_view name);

// The databases a request to a route of `scope` acts on, or the answer that refuses it:
// 400 invalid_request for a parameter given twice, empty or out of shape; 404
// unknown_database for a name the node does not serve; 400 database_required when a route
// of Databases::one names none and the node serves several. `control` names the control
// database (empty: the first).
[[nodiscard]] std::variant<std::vector<engine::OutboxEngine*>, ApiResponse> choose_databases(
    Databases scope, const ParsedTarget& target, const engine::EngineDirectory& engines,
    std::string_view control);

}  // namespace outboxd::http
