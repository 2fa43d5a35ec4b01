// Namespaces (README, "Tenant controls", "Delivery controls"): every namespace's counts and
// settings, in one database or every one, and one namespace's settings in one database.

#include <map>

#include <nlohmann/json.hpp>

#include "api_json.hpp"
#include "api_routes.hpp"
#include "row_parser.hpp"

namespace outboxd::http {
namespace {

using nlohmann::json;

// A namespace's settings in `database`, as GET /v1/namespaces/{ns} shows them and the
// listing holds them.
json settings_json(const std::string& name, const std::optional<store::NamespaceSettings>& s,
                   std::int64_t default_quota, const std::string& database) {
    auto out = namespace_json(name, s, default_quota);
    out["database"] = database;
    return out;
}

// One database's namespaces: its counts and settings, those `grant` reads only.
json namespaces_of(store::AdminStores& db, const auth::Grant& grant, std::int64_t default_quota,
                   const std::string& database) {
    auto counts = db.admin.namespace_counts();
    // A reader lists its namespaces only.
    std::erase_if(counts,
                  [&](const auto& c) { return !grant.may(auth::Role::reader, c.namespace_name); });
    std::map<std::string, store::NamespaceSettings> settings;
    for (auto& s : db.admin.list_namespaces()) settings.emplace(s.name, std::move(s));
    json list = json::array();
    for (const auto& c : counts) {
        const auto found = settings.find(c.namespace_name);
        const auto own = found == settings.end()
                             ? std::nullopt
                             : std::optional<store::NamespaceSettings>{found->second};
        list.push_back({{"namespace", c.namespace_name},
                        {"settings", settings_json(c.namespace_name, own, default_quota, database)},
                        {"pending", c.pending},
                        {"claimed", c.claimed},
                        {"dead_letters", c.dead_letters},
                        {"finished_last_minute",
                         {{"done", c.done_last_minute},
                          {"failed", c.failed_last_minute},
                          {"cancelled", c.cancelled_last_minute}}}});
    }
    return list;
}

void list(const ApiContext& api, const RouteRequest& r, Respond respond) {
    ApiContext::Walk<json> plan;
    plan.next = [default_quota = api.settings().default_max_in_flight, grant = r.grant](
                    const engine::OutboxEngine& database, const ApiContext::Parts<json>&) {
        return std::optional<ApiContext::PartJob<json>>{
            [default_quota, grant, name = database.name()](store::AdminStores& db) {
                return namespaces_of(db, *grant, default_quota, name);
            }};
    };
    plan.combine = [](const ApiContext::Parts<json>& parts) {
        return json_response({{"namespaces", tagged_items(parts)}});
    };
    api.walk(r.databases, std::move(plan), std::move(respond));
}

void put(const ApiContext& api, const RouteRequest& r, Respond respond) {
    auto parsed = parse_namespace_request(r.params[0], r.request.body);
    if (auto* error = std::get_if<RowError>(&parsed)) {
        return respond(error_response(400, error->code, error->message));
    }
    if (!r.grant->may(auth::Role::operator_, r.params[0])) {
        return respond(forbidden_in(auth::Role::operator_, r.params[0]));
    }
    auto* cache = &r.database().namespaces();
    const auto default_quota = api.settings().default_max_in_flight;
    api.change(
        r, r.database(), r.params[0],
        [settings = std::get<store::NamespaceSettings>(std::move(parsed)), default_quota,
         database = r.database().name()](store::AdminStores& db) {
            db.admin.put_namespace(settings);
            return json_response(settings_json(settings.name, db.admin.get_namespace(settings.name),
                                               default_quota, database));
        },
        // The change is in effect on this node when the answer goes out; other nodes take it
        // within their cache TTL.
        [cache](ApiResponse response, Respond respond) {
            if (response.status != 200) return respond(std::move(response));
            cache->refresh_now([response = std::move(response), respond = std::move(respond)] {
                respond(response);
            });
        },
        std::move(respond));
}

void get(const ApiContext& api, const RouteRequest& r, Respond respond) {
    if (!r.grant->may(auth::Role::reader, r.params[0])) {
        return respond(forbidden_in(auth::Role::reader, r.params[0]));
    }
    const auto default_quota = api.settings().default_max_in_flight;
    api.on_lane(
        r.database(),
        [name = r.params[0], default_quota,
         database = r.database().name()](store::AdminStores& db) {
            return json_response(
                settings_json(name, db.admin.get_namespace(name), default_quota, database));
        },
        std::move(respond));
}

}  // namespace

void add_namespace_routes(RouteTable& table, const ApiContext& api) {
    using auth::Role;
    table.add({"GET", "/v1/namespaces", Access::needs(Role::reader),
               [&api](const RouteRequest& r, Respond respond) { list(api, r, std::move(respond)); },
               Databases::any});
    table.add({"GET", "/v1/namespaces/{ns}", Access::needs(Role::reader),
               [&api](const RouteRequest& r, Respond respond) { get(api, r, std::move(respond)); },
               Databases::one});
    table.add({"PUT", "/v1/namespaces/{ns}", Access::needs(Role::operator_),
               [&api](const RouteRequest& r, Respond respond) { put(api, r, std::move(respond)); },
               Databases::one});
}

}  // namespace outboxd::http
