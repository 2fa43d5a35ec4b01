// The node's own routes: the probes, the metrics and the cluster view workers discover
// nodes by (README, "HTTP API").

#include "api_json.hpp"
#include "api_routes.hpp"

namespace outboxd::http {
namespace {

nlohmann::json shards_json(const store::ShardRanges& shards) {
    auto out = nlohmann::json::array();
    for (const auto& [lo, hi] : shards.ranges()) out.push_back({lo, hi});
    return out;
}

// Every node of the databases this node serves: `shards` the first database's (as before
// several databases), `databases` each one's.
std::string cluster_json(const engine::EngineDirectory& engines) {
    const auto& first = engines.primary().name();
    auto nodes = nlohmann::json::array();
    for (const auto& node : engines.fleet()) {
        auto shards = nlohmann::json::array();
        auto databases = nlohmann::json::array();
        for (const auto& [database, owned] : node.databases) {
            if (database == first) shards = shards_json(owned);
            databases.push_back({{"database", database}, {"shards", shards_json(owned)}});
        }
        nodes.push_back({{"node_id", node.node_id},
                         {"url", node.url},
                         {"draining", node.draining},
                         {"shards", std::move(shards)},
                         {"databases", std::move(databases)}});
    }
    return json_text(nlohmann::json{{"nodes", std::move(nodes)}});
}

// Each database's readiness: reached, schema current, this node a live member.
nlohmann::json databases_json(const engine::EngineDirectory& engines) {
    auto out = nlohmann::json::object();
    for (const auto& engine : engines.engines()) out[engine->name()] = {{"ready", engine->ready()}};
    return out;
}

}  // namespace

void add_node_routes(RouteTable& table, const ApiContext& api) {
    table.add(
        {"GET", "/healthz", Access::anyone(), [](const RouteRequest&, const Respond& respond) {
             respond(json_response({{"status", "ok"}}));
         }});
    table.add(
        {"GET", "/readyz", Access::anyone(), [&api](const RouteRequest&, const Respond& respond) {
             const bool ready = api.services().ready();
             const auto& engines = api.services().engines;
             respond(json_response({{"ready", ready},
                                    {"registered", api.engine().member().registered()},
                                    {"databases", databases_json(engines)}},
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
                   respond(text_response(cluster_json(api.services().engines)));
               }});
}

}  // namespace outboxd::http
