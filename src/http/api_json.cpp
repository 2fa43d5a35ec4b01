#include "api_json.hpp"

#include <algorithm>

#include "outboxd/cluster/cluster_member.hpp"
#include "outboxd/schedule/firings.hpp"
#include "target_parser.hpp"
#include "time_format.hpp"

namespace outboxd::http {
namespace {

using nlohmann::json;

json rate_json(const std::optional<store::RateLimit>& rate) {
    if (!rate) return nullptr;
    return {{"per_second", rate->per_second}, {"burst", rate->burst}};
}

constexpr std::size_t kShownFireTimes = 5;

std::string fire_time(std::chrono::sys_seconds at) {
    return format_rfc3339(store::TimePoint{
        std::chrono::duration_cast<std::chrono::microseconds>(at.time_since_epoch())});
}

}  // namespace

// As JSON text: the input is spliced as stored, never parsed (a number jsonb holds may be
// out of a double's range).
std::string schedule_json(const store::ScheduleRecord& record, bool payloads) {
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
    if (!payloads) {
        out["payloads_hidden"] = true;
        out["input"] = nullptr;
        return json_text(out);
    }
    // The input as stored (jsonb text), never re-serialized.
    auto text = json_text(out);
    text.pop_back();
    return text + R"(,"input":)" + s.input_json + "}";
}

std::string with_database(const std::string& object, const std::string& database) {
    auto tagged = "{\"database\":" + json_text(database);
    if (object.size() > 2) tagged += ',';
    return tagged + object.substr(1);
}

json tagged_items(const std::vector<std::pair<std::string, json>>& parts) {
    json items = json::array();
    for (const auto& [database, part] : parts) {
        for (const auto& item : part) {
            auto tagged = item;
            tagged["database"] = database;
            items.push_back(std::move(tagged));
        }
    }
    return items;
}

std::string tagged_items(
    const std::vector<std::pair<std::string, std::vector<std::string>>>& parts) {
    std::string items = "[";
    for (const auto& [database, part] : parts) {
        for (const auto& item : part) {
            if (items.size() > 1) items += ',';
            items += with_database(item, database);
        }
    }
    return items + "]";
}

ApiResponse json_response(const json& body, int status) {
    return {status, "application/json", json_text(body)};
}

ApiResponse text_response(std::string json_text, int status) {
    return {status, "application/json", std::move(json_text)};
}

std::string row_json(const store::OutboxRow& row, bool payloads) {
    json fields = {{"dispatch_key", row.dispatch_key},
                   {"workflow_id", row.workflow_id},
                   {"ordinal", row.ordinal},
                   {"run_id", optional_json(row.run_id)},
                   {"namespace", row.namespace_name},
                   {"task_queue", row.task_queue},
                   {"node", optional_json(row.node)},
                   {"activity_type", row.activity_type},
                   {"status", store::to_string(row.status)},
                   {"attempt", row.attempt},
                   {"deliveries", row.deliveries},
                   {"visible_after", format_rfc3339(row.visible_after)},
                   {"claimed_at", optional_time(row.claimed_at)},
                   {"claimed_by", optional_json(row.claimed_by)},
                   {"last_error", optional_json(row.last_error)},
                   {"created_at", format_rfc3339(row.created_at)},
                   {"finished_at", optional_time(row.finished_at)},
                   {"shard", row.shard},
                   {"priority", row.priority},
                   {"waiting", row.waiting},
                   {"traceparent", optional_json(row.traceparent)},
                   {"heartbeat_at", optional_time(row.heartbeat_at)}};
    if (!payloads) {
        // A reader without read_payloads: the row's state, none of its data.
        fields["payloads_hidden"] = true;
        fields["input"] = nullptr;
        fields["result"] = nullptr;
        fields["progress"] = nullptr;
        return json_text(fields);
    }
    std::string text = json_text(fields);
    text.pop_back();  // the closing brace
    text += R"(,"input":)";
    text += row.input_json.empty() ? "null" : row.input_json;
    // The result too, as stored (jsonb text): null when the row has none.
    text += R"(,"result":)";
    text += row.result_json ? *row.result_json : "null";
    text += R"(,"progress":)";
    text += row.progress_json ? *row.progress_json : "null";
    text += '}';
    return text;
}

std::string workflow_json(const std::string& workflow, const std::vector<store::OutboxRow>& rows,
                          const store::WorkflowFlags& flags,
                          const std::optional<std::string>& blocked_by,
                          const std::function<bool(const std::string&)>& payloads) {
    std::string text = json_text(json{{"workflow_id", workflow},
                                      {"blocked_by", optional_json(blocked_by)},
                                      {"paused", flags.paused},
                                      {"cancelled", flags.cancelled}});
    text.pop_back();  // the closing brace
    text += R"(,"rows":[)";
    for (std::size_t i = 0; i < rows.size(); ++i) {
        if (i > 0) text += ',';
        text += row_json(rows[i], !payloads || payloads(rows[i].namespace_name));
    }
    text += "]}";
    return text;
}

json dead_letter_json(const store::DeadLetter& l) {
    return {{"dispatch_key", l.dispatch_key},
            {"workflow_id", l.workflow_id},
            {"namespace", l.namespace_name},
            {"task_queue", l.task_queue},
            {"activity_type", l.activity_type},
            {"attempt", l.attempt},
            {"last_error", optional_json(l.last_error)},
            {"failed_at", optional_time(l.failed_at)}};
}

json namespace_json(const std::string& name, const std::optional<store::NamespaceSettings>& s,
                    std::int64_t default_quota) {
    const auto quota = s ? s->max_in_flight : std::nullopt;
    const store::DeliveryControls defaults;
    const auto& controls = s ? s->controls : defaults;
    json activities = json::object();
    for (const auto& [type, policy] : controls.activities) {
        // Every field, null when unset (it falls back to "*", then to the node's setting).
        const auto or_null = [](const auto& value) { return value ? json(*value) : json(nullptr); };
        json backoff = nullptr;
        if (const auto& b = policy.backoff) {
            backoff = {{"base_ms", or_null(b->base_ms)},
                       {"multiplier", or_null(b->multiplier)},
                       {"max_ms", or_null(b->max_ms)}};
        }
        activities[type] = {{"max_in_flight", or_null(policy.max_in_flight)},
                            {"rate_limit", rate_json(policy.rate_limit)},
                            {"max_attempts", or_null(policy.max_attempts)},
                            {"timeout_ms", or_null(policy.timeout_ms)},
                            {"heartbeat_timeout_ms", or_null(policy.heartbeat_timeout_ms)},
                            {"backoff", backoff}};
    }
    return {{"namespace", name},
            {"ordering", store::to_string(controls.ordering)},
            {"on_dead_letter", store::to_string(controls.on_dead_letter)},
            {"rate_limit", rate_json(controls.rate_limit)},
            {"activities", activities},
            {"configured", s.has_value()},
            {"max_in_flight", quota ? json(*quota) : json(nullptr)},
            {"effective_max_in_flight", quota ? static_cast<std::int64_t>(*quota) : default_quota},
            {"placement",
             {{"mode", store::to_string(s ? s->placement.mode : store::PlacementMode::unplaced)},
              {"nodes", s ? s->placement.nodes : std::vector<std::string>{}}}},
            {"weight", s ? s->weight : 1},
            {"keep_results", s ? s->keep_results : true}};
}

json target_json(const store::TargetRecord& record, const sinks::targets::TargetStates& states,
                 const std::string& node_id) {
    const auto& t = record.settings;
    json headers = json::object();
    for (const auto& [name, value] : t.headers) headers[name] = kRedactedValue;
    const auto& at_rest = record.secrets;
    const auto* kind = sinks::targets::find_kind(t.kind);
    json out = {{"name", t.name},
                {"kind", t.kind},
                {"namespace", t.namespace_name},
                {"task_queue", t.task_queue},
                {"activity_types", t.activity_types},
                {"url", kind ? kind->shown_url(t.url) : sinks::http_push::url_without_query(t.url)},
                {"max_in_flight", t.max_in_flight},
                {"timeout_ms", t.timeout_ms},
                {"signing_secret_set", t.signing_secret.has_value()},
                {"headers", headers},
                {"secrets_at_rest",
                 {{"encrypted", at_rest.encrypted},
                  {"clear", at_rest.clear},
                  {"key_ids", at_rest.key_ids}}},
                {"ca_file", optional_json(t.ca_file)},
                {"created_at", format_rfc3339(record.created_at)},
                {"updated_at", format_rfc3339(record.updated_at)},
                {"last_error", optional_json(record.last_error)},
                {"last_error_at", optional_time(record.last_error_at)},
                {"last_success_at", optional_time(record.last_success_at)}};
    // The kind's options as given (booleans as booleans), and which credentials are set.
    if (kind) {
        for (const auto& spec : kind->options()) {
            const auto it = t.options.find(std::string{spec.name});
            if (it == t.options.end()) continue;
            out[std::string{spec.name}] =
                spec.boolean ? json(it->second == "true") : json(it->second);
        }
        if (!kind->credentials().empty()) {
            json set = json::array();
            for (const auto& [name, value] : t.credentials) set.push_back(name);
            out["credentials_set"] = set;
        }
        if (t.kind != "http") out["body"] = sinks::targets::sends_whole_task(t) ? "task" : "input";
    }
    json node = {{"node_id", node_id},    {"share", 0},
                 {"in_flight", 0},        {"connected", false},
                 {"last_error", nullptr}, {"refused", nullptr}};
    if (const auto it = states.find(t.name); it != states.end()) {
        const auto& state = it->second;
        node["share"] = state.share;
        node["in_flight"] = state.in_flight;
        node["connected"] = state.connected;
        node["last_error"] = optional_json(state.last_error);
        node["refused"] = optional_json(state.refused);
    }
    out["node"] = node;
    return out;
}

}  // namespace outboxd::http

namespace outboxd::http {

nlohmann::json grant_json(const auth::Grant& grant) {
    json scopes = json::array();
    for (const auto& scope : grant.scopes) {
        json roles = json::array();
        for (const auto role : scope.roles.roles()) roles.push_back(auth::role_name(role));
        scopes.push_back({{"namespace", scope.namespace_name}, {"roles", roles}});
    }
    std::optional<store::TimePoint> expires;
    if (grant.expires_at) {
        expires = std::chrono::time_point_cast<std::chrono::microseconds>(*grant.expires_at);
    }
    return {{"credential_id", grant.credential_id},
            {"scopes", scopes},
            {"nodes", grant.nodes},
            {"expires_at", optional_time(expires)}};
}

}  // namespace outboxd::http
