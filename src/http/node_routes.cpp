// The node's own routes: the probes, the metrics and the cluster view workers discover
// nodes by (README, "HTTP API").

#include "api_json.hpp"
#include "api_routes.hpp"

namespace outboxd::http {

void add_node_routes(RouteTable& table, const ApiContext& api) {
    table.add(
        {"GET", "/healthz", Access::anyone(), [](const RouteRequest&, const Respond& respond) {
             respond(json_response({{"status", "ok"}}));
         }});
    table.add(
        {"GET", "/readyz", Access::anyone(), [&api](const RouteRequest&, const Respond& respond) {
             const bool ready = api.services().ready();
             respond(json_response(
                 {{"ready", ready}, {"registered", api.engine().member().registered()}},
                 ready ? 200 : 503));
         }});
    // Its labels name namespaces and targets: private on request.
    const auto metrics_access = api.settings().metrics_private
                                    ? Access::needs_everywhere(auth::Role::reader)
                                    : Access::anyone();
    table.add(
        {"GET", "/metrics", metrics_access, [&api](const RouteRequest&, const Respond& respond) {
             respond({200, "text/plain; version=0.0.4",
                      metrics::serialize(api.services().metrics_registry)});
         }});
    // Who the caller is and what it may reach: the console shows and hides by it.
    table.add({"GET", "/v1/whoami", Access::signed_in(),
               [](const RouteRequest& r, const Respond& respond) {
                   respond(json_response(grant_json(*r.grant)));
               }});
    // Workers discover the cluster here: a worker or a reader may see it.
    table.add({"GET", "/v1/cluster", Access::needs(auth::Role::worker, auth::Role::reader),
               [&api](const RouteRequest&, const Respond& respond) {
                   respond(text_response(cluster_json(api.engine().member())));
               }});
}

}  // namespace outboxd::http
