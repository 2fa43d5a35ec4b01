#pragma once

// The API's resources, one file of routes each: each adds its routes (method, pattern, who
// may call it, handler) to the router's table. A new resource is a new file and a line in
// ApiRouter's constructor. Loop thread only.

#include "api_context.hpp"
#include "route_table.hpp"

namespace outboxd::http {

// GET /healthz, /readyz, /metrics; GET /v1/cluster (node_routes.cpp).
void add_node_routes(RouteTable& table, const ApiContext& api);
// GET /ui/… (ui_routes.cpp).
void add_ui_routes(RouteTable& table);
// POST /v1/outbox, GET /v1/outbox/{key} (outbox_routes.cpp).
void add_outbox_routes(RouteTable& table, const ApiContext& api);
// GET /v1/workflows/{id}, POST …/pause, …/resume, …/cancel (workflow_routes.cpp).
void add_workflow_routes(RouteTable& table, const ApiContext& api);
// GET /v1/dead-letters, POST …/requeue, …/purge, …/{key}/requeue (dead_letter_routes.cpp).
void add_dead_letter_routes(RouteTable& table, const ApiContext& api);
// GET /v1/namespaces, GET and PUT /v1/namespaces/{ns} (namespace_routes.cpp).
void add_namespace_routes(RouteTable& table, const ApiContext& api);
// GET /v1/http-targets, GET, PUT and DELETE /v1/http-targets/{name} (target_routes.cpp).
void add_target_routes(RouteTable& table, const ApiContext& api);
// GET /v1/schedules, GET, PUT and DELETE /v1/schedules/{id} (schedule_routes.cpp).
void add_schedule_routes(RouteTable& table, const ApiContext& api);

// A `limit` query parameter (default 100, 1..kMaxListLimit), or nullopt when it is bad.
[[nodiscard]] std::optional<std::int32_t> parse_limit(
    const std::map<std::string, std::string>& query);
[[nodiscard]] ApiResponse bad_limit();
[[nodiscard]] ApiResponse not_found(std::string_view what);

}  // namespace outboxd::http
