// The node's own routes: the probes, the metrics and the cluster view workers discover
// nodes by (README, "HTTP API").

#include "api_json.hpp"
#include "api_routes.hpp"

namespace outboxd::http {

void add_node_routes(RouteTable& table, const ApiContext& api) {
    table.add({"GET", "/healthz", Access::open, [](const RouteRequest&, const Respond& respond) {
                   respond(json_response({{"status", "ok"}}));
               }});
    table.add({"GET", "/readyz", Access::open, [&api](const RouteRequest&, const Respond& respond) {
                   const bool ready = api.services().ready();
                   respond(json_response(
                       {{"ready", ready}, {"registered", api.engine().member().registered()}},
                       ready ? 200 : 503));
               }});
    table.add(
        {"GET", "/metrics", Access::open, [&api](const RouteRequest&, const Respond& respond) {
             respond({200, "text/plain; version=0.0.4",
                      metrics::serialize(api.services().metrics_registry)});
         }});
    // Workers discover the cluster here, so either token opens it.
    table.add(
        {"GET", "/v1/cluster", Access::worker, [&api](const RouteRequest&, const Respond& respond) {
             respond(text_response(cluster_json(api.engine().member())));
         }});
}

}  // namespace outboxd::http
