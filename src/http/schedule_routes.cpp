// The schedule routes of the API (README, "Schedules"): PUT, GET and DELETE
// /v1/schedules/{id} and GET /v1/schedules, with each schedule's next fire times.

#include <regex>

#include <nlohmann/json.hpp>

#include "api_router.hpp"
#include "outboxd/schedule/firings.hpp"
#include "outboxd/store/store_error.hpp"
#include "outboxd/util/untrusted_text.hpp"
#include "outboxd/worker/protocol.hpp"
#include "time_format.hpp"

namespace outboxd::http {
namespace {

using nlohmann::json;

constexpr std::size_t kShownFireTimes = 5;

ApiResponse ok(const json& body) { return {200, "application/json", json_text(body)}; }

ApiResponse bad(const std::string& field, const std::string& message) {
    json body = {{"error", {{"code", "invalid_request"}, {"message", message}}}};
    if (!field.empty()) body["error"]["field"] = field;
    return {400, "application/json", json_text(body)};
}

bool id_has_shape(const std::string& id) {
    static const std::regex shape{"[A-Za-z0-9._-]{1,128}"};
    return std::regex_match(id, shape);
}

std::string fire_time(std::chrono::sys_seconds at) {
    return format_rfc3339(store::TimePoint{
        std::chrono::duration_cast<std::chrono::microseconds>(at.time_since_epoch())});
}

// As JSON text: the input is spliced as stored, never parsed (a number jsonb holds may be
// out of a double's range).
std::string schedule_json(const store::ScheduleRecord& record) {
    const auto& s = record.spec;
    json times = json::array();
    std::string error;
    const auto expr = schedule::parse_cron(s.cron, error);
    const auto* zone = expr ? schedule::find_time_zone(s.timezone, error) : nullptr;
    if (expr && zone && record.next_fire_at) {
        const auto from = std::chrono::floor<std::chrono::seconds>(
            std::chrono::sys_time<std::chrono::microseconds>{
                record.next_fire_at->time_since_epoch()});
        for (const auto at : schedule::upcoming(*expr, *zone, from, kShownFireTimes)) {
            times.push_back(fire_time(at));
        }
    }
    json out = {{"id", s.id},
                {"cron", s.cron},
                {"timezone", s.timezone},
                {"namespace", s.namespace_name},
                {"task_queue", s.task_queue},
                {"activity_type", s.activity_type},
                {"workflow_id", optional_json(s.workflow_id)},
                {"catch_up", s.catch_up},
                {"next_fire_at", optional_time(record.next_fire_at)},
                {"next_fire_times", times},
                {"last_fired_at", optional_time(record.last_fired_at)},
                {"last_error", optional_json(record.last_error)},
                {"created_at", format_rfc3339(record.created_at)},
                {"updated_at", format_rfc3339(record.updated_at)}};
    // The input as stored (jsonb text), never re-serialized.
    auto text = json_text(out);
    text.pop_back();
    return text + R"(,"input":)" + s.input_json + "}";
}

ApiResponse ok_text(std::string body) { return {200, "application/json", std::move(body)}; }

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

}  // namespace

void ApiRouter::schedules(const std::vector<std::string>& seg, const ApiRequest& request,
                          Respond respond) {
    if (seg.size() == 2) {
        if (request.method != "GET") {
            return respond(error_response(405, "method_not_allowed",
                                          request.method + " is not allowed here; use GET"));
        }
        return on_lane(
            [](store::AdminStores& db) {
                std::string list = R"({"schedules":[)";
                for (const auto& record : db.schedules.list()) {
                    if (list.back() == '}') list += ',';
                    list += schedule_json(record);
                }
                return ok_text(list + "]}");
            },
            std::move(respond));
    }
    const std::string& id = seg[2];
    if (!id_has_shape(id)) {
        return respond(bad("id", "a schedule id is 1-128 of A-Z a-z 0-9 . _ -"));
    }
    const auto missing = [id] {
        return error_response(404, "not_found", "no schedule '" + id + "'");
    };
    if (request.method == "GET") {
        return on_lane(
            [id, missing](store::AdminStores& db) {
                const auto record = db.schedules.get(id);
                return record ? ok_text(schedule_json(*record)) : missing();
            },
            std::move(respond));
    }
    if (request.method == "DELETE") {
        return on_lane(
            [id, missing](store::AdminStores& db) {
                return db.schedules.remove(id) ? ok({{"id", id}, {"deleted", true}}) : missing();
            },
            std::move(respond));
    }
    if (request.method != "PUT") {
        return respond(
            error_response(405, "method_not_allowed",
                           request.method + " is not allowed here; use GET, PUT or DELETE"));
    }
    auto parsed = parse_schedule(id, request.body);
    if (auto* error = std::get_if<ApiResponse>(&parsed)) return respond(std::move(*error));
    on_lane(
        [spec = std::get<store::ScheduleSpec>(std::move(parsed))](store::AdminStores& db) {
            db.schedules.put(spec);
            const auto record = db.schedules.get(spec.id);
            if (!record) return error_response(503, "conflict", "the schedule vanished; try again");
            return ok_text(schedule_json(*record));
        },
        std::move(respond));
}

}  // namespace outboxd::http
