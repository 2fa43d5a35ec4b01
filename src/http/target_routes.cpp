// The target routes of the API (README, "Targets"): PUT, GET and DELETE /v1/targets/{name}
// and GET /v1/targets, for every kind; /v1/http-targets, the same for HTTP targets only (the
// routes they had first). Secrets are never returned: not the signing secret, header values,
// credentials, nor the URL's query or password (they often carry credentials).

#include <nlohmann/json.hpp>

#include "api_json.hpp"
#include "api_routes.hpp"
#include "outboxd/sinks/targets/targets.hpp"
#include "target_parser.hpp"

namespace outboxd::http {

using nlohmann::json;
using sinks::targets::Targets;
using sinks::targets::TargetStates;

namespace {

// Which targets a route serves: all, or one kind's (the /v1/http-targets alias).
struct Flavor {
    std::optional<std::string_view> only_kind;
    std::string_view list_key = "targets";

    [[nodiscard]] bool serves(const store::TargetRecord& record) const {
        return !only_kind || record.settings.kind == *only_kind;
    }
    [[nodiscard]] std::string noun() const { return only_kind ? "HTTP target" : "target"; }
};

constexpr Flavor kAllKinds{};
constexpr Flavor kHttpOnly{"http", "http_targets"};

// This node's targets in a database: their states are taken on the loop before a job goes
// to the lane (the job must not reach into loop-thread state).
Targets* targets_of(const engine::OutboxEngine& database) { return database.sinks<Targets>(); }

TargetStates states_of(const engine::OutboxEngine& database) {
    auto* targets = targets_of(database);
    return targets ? targets->states() : TargetStates{};
}

std::string node_id_of(const engine::OutboxEngine& database) {
    return database.member().settings().node_id;
}

// A target as the API shows it: tagged with its database.
json shown(const store::TargetRecord& record, const TargetStates& states,
           const std::string& node_id, const std::string& database) {
    auto out = target_json(record, states, node_id);
    out["database"] = database;
    return out;
}

// Take a change here at once; other nodes see it within their refresh.
ApiContext::Finish refresh(const engine::OutboxEngine& database) {
    return [targets = targets_of(database)](ApiResponse response, const Respond& respond) {
        if (targets && response.status == 200) targets->refresh_now();
        respond(std::move(response));
    };
}

void list(const ApiContext& api, const RouteRequest& r, Respond respond, Flavor flavor) {
    ApiContext::Walk<json> plan;
    plan.next = [grant = r.grant, flavor](const engine::OutboxEngine& database,
                                          const ApiContext::Parts<json>&) {
        return std::optional<ApiContext::PartJob<json>>{[states = states_of(database),
                                                         node_id = node_id_of(database), grant,
                                                         flavor](store::AdminStores& db) {
            json list = json::array();
            for (const auto& record : db.targets.list()) {
                if (!flavor.serves(record)) continue;
                if (!grant->may(auth::Role::reader, record.settings.namespace_name)) continue;
                list.push_back(target_json(record, states, node_id));
            }
            return list;
        }};
    };
    plan.combine = [flavor](const ApiContext::Parts<json>& parts) {
        return json_response({{std::string{flavor.list_key}, tagged_items(parts)}});
    };
    api.walk(r.databases, std::move(plan), std::move(respond));
}

ApiResponse missing(const std::string& name, Flavor flavor) {
    return error_response(404, "not_found", "no " + flavor.noun() + " named '" + name + "'");
}

void get(const ApiContext& api, const RouteRequest& r, Respond respond, Flavor flavor) {
    auto& database = r.database();
    api.on_lane(
        database,
        [states = states_of(database), node_id = node_id_of(database), name = r.params[0],
         grant = r.grant, database_name = database.name(), flavor](store::AdminStores& db) {
            const auto record = db.targets.get(name);
            // Another tenant's target is as missing as one that never was.
            if (!record || !flavor.serves(*record) ||
                !grant->may(auth::Role::reader, record->settings.namespace_name)) {
                return missing(name, flavor);
            }
            return json_response(shown(*record, states, node_id, database_name));
        },
        std::move(respond));
}

void remove(const ApiContext& api, const RouteRequest& r, Respond respond, Flavor flavor) {
    api.change(
        r, r.database(), std::nullopt,
        [name = r.params[0], grant = r.grant, flavor](store::AdminStores& db) {
            const auto record = db.targets.get(name);
            if (!record || !flavor.serves(*record)) return missing(name, flavor);
            if (!grant->may_everywhere(auth::Role::operator_)) {
                if (auto refused = change_refusal(*grant, record->settings.namespace_name,
                                                  missing(name, flavor))) {
                    return *refused;
                }
            }
            if (!db.targets.remove(name)) return missing(name, flavor);
            return json_response({{"name", name}, {"deleted", true}});
        },
        refresh(r.database()), std::move(respond));
}

void put(const ApiContext& api, const RouteRequest& r, Respond respond, Flavor flavor) {
    const sinks::targets::HostPolicy no_policy;
    auto& database = r.database();
    auto* targets = targets_of(database);
    auto parsed = parse_target_request(r.params[0], r.request.body,
                                       targets ? targets->policy() : no_policy, flavor.only_kind);
    if (auto* error = std::get_if<TargetBodyError>(&parsed)) {
        json body = {{"error", {{"code", error->code}, {"message", error->message}}}};
        if (!error->field.empty()) body["error"]["field"] = error->field;
        return respond({400, "application/json", json_text(body)});
    }
    auto request = std::get<TargetRequest>(std::move(parsed));
    const auto& target = request.target;
    // A change needs operator over the namespace the target serves, and over the one it
    // served before (taking over another tenant's target by its name is no change of one's
    // own).
    if (!r.grant->may(auth::Role::operator_, target.namespace_name)) {
        return respond(forbidden_in(auth::Role::operator_, target.namespace_name));
    }
    auto ns = target.namespace_name;
    api.change(
        r, database, std::move(ns),
        [request = std::move(request), states = states_of(database), node_id = node_id_of(database),
         grant = r.grant, database_name = database.name(), flavor](store::AdminStores& db) {
            const auto& name = request.target.name;
            if (const auto before = db.targets.get(name)) {
                // Names are unique across kinds: the alias does not replace another kind's.
                if (!flavor.serves(*before)) {
                    return error_response(409, "conflict",
                                          "target '" + name + "' is a " + before->settings.kind +
                                              " target: change it through /v1/targets/" + name);
                }
                if (auto refused = change_refusal(
                        *grant, before->settings.namespace_name,
                        forbidden_in(auth::Role::operator_, before->settings.namespace_name))) {
                    return *refused;
                }
            }
            db.targets.put(request.target, request.signing_secret, request.kept_credentials);
            const auto record = db.targets.get(name);
            if (!record) return error_response(503, "conflict", "the target vanished; try again");
            return json_response(shown(*record, states, node_id, database_name));
        },
        refresh(database), std::move(respond));
}

}  // namespace

void add_target_routes(RouteTable& table, const ApiContext& api) {
    using auth::Role;
    for (const auto& route : {std::pair{std::string{"/v1/targets"}, kAllKinds},
                              std::pair{std::string{"/v1/http-targets"}, kHttpOnly}}) {
        const auto& prefix = route.first;
        const auto flavor = route.second;
        table.add({"GET", prefix, Access::needs(Role::reader),
                   [&api, flavor](const RouteRequest& r, Respond respond) {
                       list(api, r, std::move(respond), flavor);
                   },
                   Databases::any});
        table.add({"GET", prefix + "/{name}", Access::needs(Role::reader),
                   [&api, flavor](const RouteRequest& r, Respond respond) {
                       get(api, r, std::move(respond), flavor);
                   },
                   Databases::one});
        table.add({"PUT", prefix + "/{name}", Access::needs(Role::operator_),
                   [&api, flavor](const RouteRequest& r, Respond respond) {
                       put(api, r, std::move(respond), flavor);
                   },
                   Databases::one});
        table.add({"DELETE", prefix + "/{name}", Access::needs(Role::operator_),
                   [&api, flavor](const RouteRequest& r, Respond respond) {
                       remove(api, r, std::move(respond), flavor);
                   },
                   Databases::one});
    }
}

}  // namespace outboxd::http
