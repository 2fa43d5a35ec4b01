// The HTTP push target routes of the API (README, "HTTP push"): PUT, GET and DELETE
// /v1/http-targets/{name} and GET /v1/http-targets. The signing secret is never returned,
// nor header values, nor the URL's query (they often carry credentials).

#include <nlohmann/json.hpp>

#include "api_json.hpp"
#include "api_routes.hpp"
#include "outboxd/sinks/http_push/http_targets.hpp"
#include "target_parser.hpp"

namespace outboxd::http {

namespace http_push = sinks::http_push;
using nlohmann::json;

namespace {

// This node's targets in a database: their states are taken on the loop before a job goes
// to the lane (the job must not reach into loop-thread state).
http_push::HttpTargets* targets_of(const engine::OutboxEngine& database) {
    return database.sinks<http_push::HttpTargets>();
}

http_push::TargetStates states_of(const engine::OutboxEngine& database) {
    auto* targets = targets_of(database);
    return targets ? targets->states() : http_push::TargetStates{};
}

std::string node_id_of(const engine::OutboxEngine& database) {
    return database.member().settings().node_id;
}

// A target as the API shows it: tagged with its database.
json shown(const store::HttpTargetRecord& record, const http_push::TargetStates& states,
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

void list(const ApiContext& api, const RouteRequest& r, Respond respond) {
    ApiContext::Walk<json> plan;
    plan.next = [grant = r.grant](const engine::OutboxEngine& database,
                                  const ApiContext::Parts<json>&) {
        return std::optional<ApiContext::PartJob<json>>{[states = states_of(database),
                                                         node_id = node_id_of(database),
                                                         grant](store::AdminStores& db) {
            json list = json::array();
            for (const auto& record : db.targets.list()) {
                if (!grant->may(auth::Role::reader, record.settings.namespace_name)) continue;
                list.push_back(target_json(record, states, node_id));
            }
            return list;
        }};
    };
    plan.combine = [](const ApiContext::Parts<json>& parts) {
        return json_response({{"http_targets", tagged_items(parts)}});
    };
    api.walk(r.databases, std::move(plan), std::move(respond));
}

ApiResponse missing(const std::string& name) {
    return error_response(404, "not_found", "no HTTP target named '" + name + "'");
}

void get(const ApiContext& api, const RouteRequest& r, Respond respond) {
    auto& database = r.database();
    api.on_lane(
        database,
        [states = states_of(database), node_id = node_id_of(database), name = r.params[0],
         grant = r.grant, database_name = database.name()](store::AdminStores& db) {
            const auto record = db.targets.get(name);
            // Another tenant's target is as missing as one that never was.
            if (!record || !grant->may(auth::Role::reader, record->settings.namespace_name)) {
                return missing(name);
            }
            return json_response(shown(*record, states, node_id, database_name));
        },
        std::move(respond));
}

void remove(const ApiContext& api, const RouteRequest& r, Respond respond) {
    api.change(
        r, r.database(), std::nullopt,
        [name = r.params[0], grant = r.grant](store::AdminStores& db) {
            if (!grant->may_everywhere(auth::Role::operator_)) {
                const auto record = db.targets.get(name);
                if (!record) return missing(name);
                if (auto refused =
                        change_refusal(*grant, record->settings.namespace_name, missing(name))) {
                    return *refused;
                }
            }
            if (!db.targets.remove(name)) return missing(name);
            return json_response({{"name", name}, {"deleted", true}});
        },
        refresh(r.database()), std::move(respond));
}

void put(const ApiContext& api, const RouteRequest& r, Respond respond) {
    const http_push::HostPolicy no_policy;
    auto& database = r.database();
    auto* targets = targets_of(database);
    auto parsed =
        parse_target_request(r.params[0], r.request.body, targets ? targets->policy() : no_policy);
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
         grant = r.grant, database_name = database.name()](store::AdminStores& db) {
            const auto& name = request.target.name;
            if (const auto before = db.targets.get(name)) {
                if (auto refused = change_refusal(
                        *grant, before->settings.namespace_name,
                        forbidden_in(auth::Role::operator_, before->settings.namespace_name))) {
                    return *refused;
                }
            }
            db.targets.put(request.target, request.signing_secret);
            const auto record = db.targets.get(name);
            if (!record) return error_response(503, "conflict", "the target vanished; try again");
            return json_response(shown(*record, states, node_id, database_name));
        },
        refresh(database), std::move(respond));
}

}  // namespace

void add_target_routes(RouteTable& table, const ApiContext& api) {
    using auth::Role;
    table.add({"GET", "/v1/http-targets", Access::needs(Role::reader),
               [&api](const RouteRequest& r, Respond respond) { list(api, r, std::move(respond)); },
               Databases::any});
    table.add({"GET", "/v1/http-targets/{name}", Access::needs(Role::reader),
               [&api](const RouteRequest& r, Respond respond) { get(api, r, std::move(respond)); },
               Databases::one});
    table.add({"PUT", "/v1/http-targets/{name}", Access::needs(Role::operator_),
               [&api](const RouteRequest& r, Respond respond) { put(api, r, std::move(respond)); },
               Databases::one});
    table.add(
        {"DELETE", "/v1/http-targets/{name}", Access::needs(Role::operator_),
         [&api](const RouteRequest& r, Respond respond) { remove(api, r, std::move(respond)); },
         Databases::one});
}

}  // namespace outboxd::http
