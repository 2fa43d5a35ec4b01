#pragma once

// The API's resources, one file of routes each: each adds its routes (method, pattern, who
// may call it, handler) to the router's table. A new resource is a new file and a line in
// ApiRouter's constructor. Loop thread only.

#include "api_context.hpp"
#include "route_table.hpp"

namespace outboxd::http {

// GET /healthz, /readyz, /metrics; GET /v1/cluster, /v1/whoami (node_routes.cpp).
void add_node_routes(RouteTable& table, const ApiContext& api);
// GET /ui/… (ui_routes.cpp).
void add_ui_routes(RouteTable& table);
// POST /v1/outbox, GET /v1/outbox/{key} (outbox_routes.cpp).
void add_outbox_routes(RouteTable& table, const ApiContext& api);
// GET /v1/workflows/{id}, POST …/pause, …/resume, …/cancel, …/uncancel (workflow_routes.cpp).
void add_workflow_routes(RouteTable& table, const ApiContext& api);
// GET /v1/dead-letters, POST …/requeue, …/purge, …/{key}/requeue (dead_letter_routes.cpp).
void add_dead_letter_routes(RouteTable& table, const ApiContext& api);
// GET /v1/namespaces, GET and PUT /v1/namespaces/{ns} (namespace_routes.cpp).
void add_namespace_routes(RouteTable& table, const ApiContext& api);
// GET /v1/http-targets, GET, PUT and DELETE /v1/http-targets/{name} (target_routes.cpp).
void add_target_routes(RouteTable& table, const ApiContext& api);
// GET /v1/schedules, GET, PUT and DELETE /v1/schedules/{id} (schedule_routes.cpp).
void add_schedule_routes(RouteTable& table, const ApiContext& api);
// POST and GET /v1/credentials, GET and DELETE /v1/credentials/{id} (credential_routes.cpp).
void add_credential_routes(RouteTable& table, const ApiContext& api);
// GET /v1/audit (audit_routes.cpp).
void add_audit_routes(RouteTable& table, const ApiContext& api);

// A `limit` query parameter (default 100, 1..kMaxListLimit), or nullopt when it is bad.
[[nodiscard]] std::optional<std::int32_t> parse_limit(
    const std::map<std::string, std::string>& query);
[[nodiscard]] ApiResponse bad_limit();
[[nodiscard]] ApiResponse not_found(std::string_view what);
// 403 {"error":{"code":"forbidden","message":…,"scope":"<role>"}}: the caller is not `role`
// of `over` ("namespace 'billing'", "every namespace").
[[nodiscard]] ApiResponse forbidden(auth::Role role, std::string_view over);
// 403 for `role` over namespace `ns`.
[[nodiscard]] ApiResponse forbidden_in(auth::Role role, std::string_view ns);
// Of a resource that serves a namespace (an HTTP target, a schedule): whether `grant` may
// change one that serves `ns` — nothing when it may, a 403 when it may only read it, and
// `missing` (the answer for one that is not there) when it may not even read it.
[[nodiscard]] std::optional<ApiResponse> change_refusal(const auth::Grant& grant,
                                                        const std::string& ns,
                                                        const ApiResponse& missing);

}  // namespace outboxd::http
