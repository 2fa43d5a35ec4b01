// The schedule routes of the API (README, "Schedules"): PUT, GET and DELETE
// /v1/schedules/{id} and GET /v1/schedules, with each schedule's next fire times.

#include <regex>

#include <nlohmann/json.hpp>

#include "api_json.hpp"
#include "api_routes.hpp"
#include "outboxd/schedule/firings.hpp"
#include "outboxd/store/store_error.hpp"
#include "outboxd/util/untrusted_text.hpp"
#include "outboxd/worker/protocol.hpp"

namespace outboxd::http {
namespace {

using nlohmann::json;

ApiResponse bad(const std::string& field, const std::string& message) {
    json body = {{"error", {{"code", "invalid_request"}, {"message", message}}}};
    if (!field.empty()) body["error"]["field"] = field;
    return {400, "application/json", json_text(body)};
}

bool id_has_shape(const std::string& id) {
    static const std::regex shape{"[A-Za-z0-9._-]{1,128}"};
    return std::regex_match(id, shape);
}

// A text field of the body: `fallback` when absent or null (none: required).
std::variant<std::string, ApiResponse> text_field(const json& body, const char* name,
                                                  std::optional<std::string> fallback) {
    const auto it = body.find(name);
    if (it == body.end() || it->is_null()) {
        if (fallback) return *fallback;
        return bad(name, "'" + std::string{name} + "' is required");
    }
    if (!it->is_string()) return bad(name, "'" + std::string{name} + "' must be a string");
    auto text = it->get<std::string>();
    if (auto why = util::identifier_problem(text, util::kMaxIdentifierBytes)) {
        return bad(name, "'" + std::string{name} + "' " + *why);
    }
    return text;
}

std::variant<store::ScheduleSpec, ApiResponse> parse_schedule(const std::string& id,
                                                              const std::string& body_text) {
    if (util::json_nesting_depth(body_text, worker::protocol::kMaxInputNesting) >
        worker::protocol::kMaxInputNesting) {
        return bad("", "the body nests deeper than " +
                           std::to_string(worker::protocol::kMaxInputNesting) + " levels");
    }
    const auto body = json::parse(body_text, nullptr, false);
    if (body.is_discarded()) return bad("", "the body is not valid JSON");
    if (!body.is_object()) return bad("", "the body must be a JSON object");
    static const std::set<std::string> known{"cron",       "timezone",      "namespace",
                                             "task_queue", "activity_type", "workflow_id",
                                             "input",      "catch_up"};
    for (const auto& [key, value] : body.items()) {
        if (!known.contains(key))
            return bad(key, "unknown field '" + util::sanitize_text(key, 80) + "'");
    }
    store::ScheduleSpec spec;
    spec.id = id;
    const std::pair<const char*, std::string*> texts[] = {{"cron", &spec.cron},
                                                          {"timezone", &spec.timezone},
                                                          {"namespace", &spec.namespace_name},
                                                          {"task_queue", &spec.task_queue},
                                                          {"activity_type", &spec.activity_type},
                                                          {"catch_up", &spec.catch_up}};
    for (const auto& [name, out] : texts) {
        const bool required =
            std::string_view{name} == "cron" || std::string_view{name} == "activity_type";
        auto value = text_field(body, name, required ? std::nullopt : std::optional{*out});
        if (auto* error = std::get_if<ApiResponse>(&value)) return std::move(*error);
        *out = std::get<std::string>(std::move(value));
    }
    if (const auto it = body.find("workflow_id"); it != body.end() && !it->is_null()) {
        auto value = text_field(body, "workflow_id", std::nullopt);
        if (auto* error = std::get_if<ApiResponse>(&value)) return std::move(*error);
        spec.workflow_id = std::get<std::string>(std::move(value));
    }
    std::string error;
    if (!schedule::parse_cron(spec.cron, error)) return bad("cron", "'cron': " + error);
    if (!schedule::find_time_zone(spec.timezone, error))
        return bad("timezone", "'timezone': " + error);
    schedule::CatchUp catch_up;
    if (!schedule::parse_catch_up(spec.catch_up, catch_up)) {
        return bad("catch_up", "'catch_up' must be \"none\", \"one\" or \"all\"");
    }
    if (const auto it = body.find("input"); it != body.end()) {
        spec.input_json = it->dump();
        if (util::json_text_has_nul(spec.input_json)) {
            return bad("input", "'input' contains \\u0000, which PostgreSQL jsonb cannot store");
        }
    }
    return spec;
}

// The id of the route, checked: its shape is the API's, whatever the method.
std::optional<ApiResponse> bad_id(const std::string& id) {
    if (id_has_shape(id)) return std::nullopt;
    return bad("id", "a schedule id is 1-128 of A-Z a-z 0-9 . _ -");
}

ApiResponse missing(const std::string& id) {
    return error_response(404, "not_found", "no schedule '" + id + "'");
}

void list(const ApiContext& api, const RouteRequest& r, Respond respond) {
    using Texts = std::vector<std::string>;
    ApiContext::Walk<Texts> plan;
    plan.next = [grant = r.grant](const engine::OutboxEngine&, const ApiContext::Parts<Texts>&) {
        return std::optional<ApiContext::PartJob<Texts>>{[grant](store::AdminStores& db) {
            Texts list;
            for (const auto& record : db.schedules.list()) {
                const auto& ns = record.spec.namespace_name;
                if (!grant->may(auth::Role::reader, ns)) continue;
                list.push_back(schedule_json(record, grant->may(auth::Role::read_payloads, ns)));
            }
            return list;
        }};
    };
    plan.combine = [](const ApiContext::Parts<Texts>& parts) {
        return text_response(R"({"schedules":)" + tagged_items(parts) + "}");
    };
    api.walk(r.databases, std::move(plan), std::move(respond));
}

void get(const ApiContext& api, const RouteRequest& r, Respond respond) {
    const auto& id = r.params[0];
    if (auto bad = bad_id(id)) return respond(std::move(*bad));
    api.on_lane(
        r.database(),
        [id, grant = r.grant, database = r.database().name()](store::AdminStores& db) {
            const auto record = db.schedules.get(id);
            // Another tenant's schedule is as missing as one that never was.
            if (!record || !grant->may(auth::Role::reader, record->spec.namespace_name)) {
                return missing(id);
            }
            return text_response(with_database(
                schedule_json(*record,
                              grant->may(auth::Role::read_payloads, record->spec.namespace_name)),
                database));
        },
        std::move(respond));
}

void remove(const ApiContext& api, const RouteRequest& r, Respond respond) {
    const auto& id = r.params[0];
    if (auto bad = bad_id(id)) return respond(std::move(*bad));
    api.change(
        r, r.database(), std::nullopt,
        [id, grant = r.grant](store::AdminStores& db) {
            if (!grant->may_everywhere(auth::Role::operator_)) {
                const auto record = db.schedules.get(id);
                if (!record) return missing(id);
                if (auto refused =
                        change_refusal(*grant, record->spec.namespace_name, missing(id))) {
                    return *refused;
                }
            }
            return db.schedules.remove(id) ? json_response({{"id", id}, {"deleted", true}})
                                           : missing(id);
        },
        std::move(respond));
}

void put(const ApiContext& api, const RouteRequest& r, Respond respond) {
    const auto& id = r.params[0];
    if (auto bad = bad_id(id)) return respond(std::move(*bad));
    auto parsed = parse_schedule(id, r.request.body);
    if (auto* error = std::get_if<ApiResponse>(&parsed)) return respond(std::move(*error));
    auto spec = std::get<store::ScheduleSpec>(std::move(parsed));
    // Operator over the namespace it stages into, and over the one it staged into before.
    if (!r.grant->may(auth::Role::operator_, spec.namespace_name)) {
        return respond(forbidden_in(auth::Role::operator_, spec.namespace_name));
    }
    auto ns = spec.namespace_name;
    api.change(
        r, r.database(), std::move(ns),
        [spec = std::move(spec), grant = r.grant,
         database = r.database().name()](store::AdminStores& db) {
            if (const auto before = db.schedules.get(spec.id)) {
                const auto& was = before->spec.namespace_name;
                if (auto refused =
                        change_refusal(*grant, was, forbidden_in(auth::Role::operator_, was))) {
                    return *refused;
                }
            }
            db.schedules.put(spec);
            const auto record = db.schedules.get(spec.id);
            if (!record) return error_response(503, "conflict", "the schedule vanished; try again");
            return text_response(with_database(schedule_json(*record), database));
        },
        std::move(respond));
}

}  // namespace

void add_schedule_routes(RouteTable& table, const ApiContext& api) {
    using auth::Role;
    table.add({"GET", "/v1/schedules", Access::needs(Role::reader),
               [&api](const RouteRequest& r, Respond respond) { list(api, r, std::move(respond)); },
               Databases::any});
    table.add({"GET", "/v1/schedules/{id}", Access::needs(Role::reader),
               [&api](const RouteRequest& r, Respond respond) { get(api, r, std::move(respond)); },
               Databases::one});
    table.add({"PUT", "/v1/schedules/{id}", Access::needs(Role::operator_),
               [&api](const RouteRequest& r, Respond respond) { put(api, r, std::move(respond)); },
               Databases::one});
    table.add(
        {"DELETE", "/v1/schedules/{id}", Access::needs(Role::operator_),
         [&api](const RouteRequest& r, Respond respond) { remove(api, r, std::move(respond)); },
         Databases::one});
}

}  // namespace outboxd::http
