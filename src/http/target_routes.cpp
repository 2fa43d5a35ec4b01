// The HTTP push target routes of the API (README, "HTTP push"): PUT, GET and DELETE
// /v1/http-targets/{name} and GET /v1/http-targets. The signing secret is never returned,
// nor header values (they often carry credentials).

#include <nlohmann/json.hpp>

#include "api_router.hpp"
#include "outboxd/sinks/http_push/http_targets.hpp"
#include "target_parser.hpp"
#include "time_format.hpp"

namespace outboxd::http {

namespace http_push = sinks::http_push;
namespace {

using nlohmann::json;

// `states`: this node's view of its targets, taken on the loop before the job went to the
// lane (the job must not reach into loop-thread state).
json target_json(const store::HttpTargetRecord& record, const http_push::TargetStates& states,
                 const std::string& node_id) {
    const auto& t = record.settings;
    json headers = json::object();
    for (const auto& [name, value] : t.headers) headers[name] = "<redacted>";
    json out = {{"name", t.name},
                {"namespace", t.namespace_name},
                {"task_queue", t.task_queue},
                {"activity_types", t.activity_types},
                {"url", t.url},
                {"max_in_flight", t.max_in_flight},
                {"timeout_ms", t.timeout_ms},
                {"signing_secret_set", t.signing_secret.has_value()},
                {"headers", headers},
                {"ca_file", optional_json(t.ca_file)},
                {"created_at", format_rfc3339(record.created_at)},
                {"updated_at", format_rfc3339(record.updated_at)},
                {"last_error", optional_json(record.last_error)},
                {"last_error_at", optional_time(record.last_error_at)},
                {"last_success_at", optional_time(record.last_success_at)}};
    json node = {{"node_id", node_id},
                 {"share", 0},
                 {"in_flight", 0},
                 {"last_error", nullptr},
                 {"refused", nullptr}};
    if (const auto it = states.find(t.name); it != states.end()) {
        const auto& state = it->second;
        node["share"] = state.share;
        node["in_flight"] = state.in_flight;
        node["last_error"] = optional_json(state.last_error);
        node["refused"] = optional_json(state.refused);
    }
    out["node"] = node;
    return out;
}

ApiResponse ok(const json& body) { return {200, "application/json", json_text(body)}; }

}  // namespace

void ApiRouter::http_targets(const std::vector<std::string>& seg, const ApiRequest& request,
                             Respond respond) {
    auto* targets = services_.engines.primary().sinks<http_push::HttpTargets>();
    const auto node_id = services_.engines.primary().member().settings().node_id;
    const auto states = targets ? targets->states() : http_push::TargetStates{};
    if (seg.size() == 2) {
        if (request.method != "GET") {
            return respond(error_response(405, "method_not_allowed",
                                          request.method + " is not allowed here; use GET"));
        }
        return on_lane(
            [states, node_id](store::AdminStores& db) {
                json list = json::array();
                for (const auto& record : db.targets.list()) {
                    list.push_back(target_json(record, states, node_id));
                }
                return ok({{"http_targets", list}});
            },
            std::move(respond));
    }
    const std::string& name = seg[2];
    if (request.method == "GET") {
        return on_lane(
            [states, node_id, name](store::AdminStores& db) {
                const auto record = db.targets.get(name);
                if (!record) {
                    return error_response(404, "not_found", "no HTTP target named '" + name + "'");
                }
                return ok(target_json(*record, states, node_id));
            },
            std::move(respond));
    }
    if (request.method == "DELETE") {
        return on_lane(
            [name](store::AdminStores& db) {
                if (!db.targets.remove(name)) {
                    return error_response(404, "not_found", "no HTTP target named '" + name + "'");
                }
                return ok({{"name", name}, {"deleted", true}});
            },
            [respond = std::move(respond),
             targets = services_.engines.primary().sinks<http_push::HttpTargets>()](
                ApiResponse response) {
                if (targets && response.status == 200) targets->refresh_now();
                respond(std::move(response));
            });
    }
    if (request.method != "PUT") {
        return respond(
            error_response(405, "method_not_allowed",
                           request.method + " is not allowed here; use GET, PUT or DELETE"));
    }
    const http_push::HostPolicy no_policy;
    auto parsed = parse_target_request(name, request.body, targets ? targets->policy() : no_policy);
    if (auto* error = std::get_if<TargetBodyError>(&parsed)) {
        json body = {{"error", {{"code", error->code}, {"message", error->message}}}};
        if (!error->field.empty()) body["error"]["field"] = error->field;
        return respond({400, "application/json", json_text(body)});
    }
    on_lane(
        [target = std::get<store::HttpTargetSettings>(std::move(parsed)), states,
         node_id](store::AdminStores& db) {
            db.targets.put(target);
            const auto record = db.targets.get(target.name);
            if (!record) return error_response(503, "conflict", "the target vanished; try again");
            return ok(target_json(*record, states, node_id));
        },
        [respond = std::move(respond),
         targets =
             services_.engines.primary().sinks<http_push::HttpTargets>()](ApiResponse response) {
            // Take the change here at once; other nodes see it within their refresh.
            if (targets && response.status == 200) targets->refresh_now();
            respond(std::move(response));
        });
}

}  // namespace outboxd::http
