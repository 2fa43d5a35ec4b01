#include "row_parser.hpp"

#include <cmath>
#include <set>

#include <nlohmann/json.hpp>

#include "outboxd/util/untrusted_text.hpp"
#include "outboxd/worker/protocol.hpp"
#include "policy_parser.hpp"
#include "time_format.hpp"

namespace outboxd::http {
namespace {

using nlohmann::json;

struct Bad {
    std::string message;
};

std::string text_field(const json& row, const char* name, bool required) {
    const auto it = row.find(name);
    if (it == row.end() || it->is_null()) {
        if (required) throw Bad{"'" + std::string{name} + "' is required"};
        return {};
    }
    if (!it->is_string()) throw Bad{"'" + std::string{name} + "' must be a string"};
    auto text = it->get<std::string>();
    if (text.empty()) throw Bad{"'" + std::string{name} + "' must not be empty"};
    return text;
}

std::optional<std::string> optional_text(const json& row, const char* name) {
    auto text = text_field(row, name, false);
    if (text.empty()) return std::nullopt;
    return text;
}

store::NewRow parse_row(const json& row) {
    static const std::set<std::string> known{
        "workflow_id", "ordinal", "activity_type", "input",         "namespace", "task_queue",
        "node",        "run_id",  "dispatch_key",  "visible_after", "priority",  "traceparent"};
    if (!row.is_object()) throw Bad{"must be a JSON object"};
    for (const auto& [key, value] : row.items()) {
        if (!known.contains(key)) throw Bad{"unknown field '" + key + "'"};
    }
    store::NewRow out;
    out.workflow_id = text_field(row, "workflow_id", true);
    const auto ordinal = row.find("ordinal");
    if (ordinal == row.end() || ordinal->is_null()) throw Bad{"'ordinal' is required"};
    if (!ordinal->is_number_integer()) throw Bad{"'ordinal' must be an integer"};
    if (ordinal->is_number_unsigned() && ordinal->get<std::uint64_t>() > INT64_MAX) {
        throw Bad{"'ordinal' is too large"};
    }
    out.ordinal = ordinal->get<std::int64_t>();
    if (out.ordinal < 0) throw Bad{"'ordinal' must be >= 0"};
    out.activity_type = text_field(row, "activity_type", true);
    if (const auto input = row.find("input"); input != row.end()) out.input_json = input->dump();
    if (auto ns = optional_text(row, "namespace")) out.namespace_name = *ns;
    if (auto queue = optional_text(row, "task_queue")) out.task_queue = *queue;
    out.node = optional_text(row, "node");
    out.run_id = optional_text(row, "run_id");
    out.dispatch_key = optional_text(row, "dispatch_key");
    if (auto when = optional_text(row, "visible_after")) {
        out.visible_after = parse_rfc3339(*when);
        if (!out.visible_after) {
            throw Bad{"'visible_after' must be an RFC 3339 timestamp such as 2026-01-31T12:00:00Z"};
        }
    }
    if (const auto priority = row.find("priority"); priority != row.end() && !priority->is_null()) {
        if (!priority->is_number_integer() || priority->get<std::int64_t>() < store::kMinPriority ||
            priority->get<std::int64_t>() > store::kMaxPriority) {
            throw Bad{"'priority' must be an integer between " +
                      std::to_string(store::kMinPriority) + " and " +
                      std::to_string(store::kMaxPriority)};
        }
        out.priority = priority->get<std::int32_t>();
    }
    if (auto trace = optional_text(row, "traceparent")) {
        if (auto problem = util::traceparent_problem(*trace))
            throw Bad{"'traceparent' " + *problem};
        out.traceparent = std::move(trace);
    }
    return out;
}

// A staging body wraps each row's input in three levels (the body, its rows, the row): the
// input may then nest as deep as a task frame can carry it.
constexpr std::size_t kStageBodyNesting = worker::protocol::kMaxInputNesting + 3;

// Refuses a body nesting deeper than `limit` before it is parsed: parsing is iterative, but
// everything done with a parsed value afterwards (dump, validation) recurses per level.
std::optional<RowError> too_deep(const std::string& body, std::size_t limit,
                                 std::string_view what) {
    if (util::json_nesting_depth(body, limit) <= limit) return std::nullopt;
    return RowError{
        "invalid_request",
        "request body nests deeper than " + std::to_string(limit) + " levels" + std::string{what},
        {}};
}

}  // namespace

std::variant<std::vector<store::NewRow>, RowError> parse_stage_request(const std::string& body,
                                                                       std::size_t max_rows) {
    if (auto error = too_deep(body, kStageBodyNesting,
                              " (a row's input may nest " +
                                  std::to_string(worker::protocol::kMaxInputNesting) + ")")) {
        return *error;
    }
    const json request = json::parse(body, nullptr, false);
    if (request.is_discarded())
        return RowError{"invalid_json", "request body is not valid JSON", {}};
    if (!request.is_object())
        return RowError{"invalid_request", "request body must be an object", {}};
    const auto rows = request.find("rows");
    if (rows == request.end() || !rows->is_array()) {
        return RowError{"invalid_request", "'rows' must be an array of rows", {}};
    }
    if (rows->empty()) return RowError{"invalid_request", "'rows' must not be empty", {}};
    if (rows->size() > max_rows) {
        return RowError{
            "invalid_request", "at most " + std::to_string(max_rows) + " rows per request", {}};
    }
    std::vector<store::NewRow> out;
    out.reserve(rows->size());
    for (std::size_t i = 0; i < rows->size(); ++i) {
        try {
            out.push_back(parse_row((*rows)[i]));
        } catch (const Bad& bad) {
            return RowError{"invalid_row", "row " + std::to_string(i) + ": " + bad.message, i};
        }
    }
    return out;
}

namespace {

// {"per_second": r, "burst": b} at `where`; burst defaults to max(1, ceil(per_second)).
store::RateLimit parse_rate(const json& value, const std::string& where) {
    if (!value.is_object()) throw Bad{"'" + where + "' must be an object"};
    for (const auto& [key, item] : value.items()) {
        if (key != "per_second" && key != "burst") {
            throw Bad{"unknown field '" + where + "." + util::sanitize_text(key, 80) + "'"};
        }
    }
    const auto rate = value.find("per_second");
    if (rate == value.end() || !rate->is_number() ||
        !(rate->get<double>() >= store::kMinRatePerSecond) ||
        rate->get<double>() > store::kMaxRatePerSecond) {
        throw Bad{"'" + where + ".per_second' must be a number between 0.001 and " +
                  std::to_string(static_cast<std::int64_t>(store::kMaxRatePerSecond))};
    }
    store::RateLimit out;
    out.per_second = rate->get<double>();
    out.burst = static_cast<std::int32_t>(std::max(1.0, std::ceil(out.per_second)));
    if (const auto burst = value.find("burst"); burst != value.end() && !burst->is_null()) {
        if (!burst->is_number_integer() || burst->get<std::int64_t>() < 1 ||
            burst->get<std::int64_t>() > store::kMaxBurst) {
            throw Bad{"'" + where + ".burst' must be an integer between 1 and " +
                      std::to_string(store::kMaxBurst)};
        }
        out.burst = burst->get<std::int32_t>();
    }
    return out;
}

bool parse_policy_field(const std::string& key, const json& value, const std::string& where,
                        store::ActivityPolicy& policy) {
    try {
        return parse_task_policy_field(key, value, where, policy);
    } catch (const std::invalid_argument& bad) {
        throw Bad{bad.what()};
    }
}

// The delivery controls of a namespace body (README, "Delivery controls").
void parse_controls(const json& request, store::DeliveryControls& controls) {
    if (const auto it = request.find("ordering"); it != request.end() && !it->is_null()) {
        if (!it->is_string() || !store::parse_ordering(it->get<std::string>(), controls.ordering)) {
            throw Bad{"'ordering' must be \"none\" or \"workflow\""};
        }
    }
    if (const auto it = request.find("on_dead_letter"); it != request.end() && !it->is_null()) {
        if (!it->is_string() ||
            !store::parse_on_dead_letter(it->get<std::string>(), controls.on_dead_letter)) {
            throw Bad{"'on_dead_letter' must be \"block\" or \"skip\""};
        }
    }
    if (const auto it = request.find("rate_limit"); it != request.end() && !it->is_null()) {
        controls.rate_limit = parse_rate(*it, "rate_limit");
    }
    const auto activities = request.find("activities");
    if (activities == request.end() || activities->is_null()) return;
    if (!activities->is_object()) throw Bad{"'activities' must be an object of activity types"};
    if (activities->size() > store::kMaxActivityPolicies) {
        throw Bad{"'activities' may name at most " + std::to_string(store::kMaxActivityPolicies) +
                  " activity types"};
    }
    for (const auto& [type, policy] : activities->items()) {
        const auto where = "activities." + util::sanitize_text(type, 80);
        if (auto why = util::identifier_problem(type, util::kMaxIdentifierBytes)) {
            throw Bad{"an activity type of 'activities' " + *why};
        }
        if (!policy.is_object()) throw Bad{"'" + where + "' must be an object"};
        store::ActivityPolicy out;
        for (const auto& [key, value] : policy.items()) {
            if (key == "max_in_flight") {
                if (!value.is_number_integer() || value.get<std::int64_t>() < 1 ||
                    value.get<std::int64_t>() > store::kMaxActivityInFlight) {
                    throw Bad{"'" + where + ".max_in_flight' must be an integer between 1 and " +
                              std::to_string(store::kMaxActivityInFlight)};
                }
                out.max_in_flight = value.get<std::int32_t>();
            } else if (key == "rate_limit") {
                out.rate_limit = parse_rate(value, where + ".rate_limit");
            } else if (value.is_null()) {
                continue;  // unset: falls back
            } else if (!parse_policy_field(key, value, where, out)) {
                throw Bad{"unknown field '" + where + "." + util::sanitize_text(key, 80) + "'"};
            }
        }
        if (type == "*" && (out.max_in_flight || out.rate_limit)) {
            throw Bad{
                "'activities.*' cannot hold limits: a limit applies to one activity type "
                "(the namespace's own max_in_flight and rate_limit cover them all)"};
        }
        controls.activities.emplace(type, out);
    }
}

}  // namespace

std::variant<store::NamespaceSettings, RowError> parse_namespace_request(const std::string& name,
                                                                         const std::string& body) {
    if (auto error = too_deep(body, worker::protocol::kMaxNesting, "")) return *error;
    const json request = json::parse(body, nullptr, false);
    if (request.is_discarded())
        return RowError{"invalid_json", "request body is not valid JSON", {}};
    if (!request.is_object())
        return RowError{"invalid_request", "request body must be an object", {}};
    store::NamespaceSettings settings;
    settings.name = name;
    try {
        static const std::set<std::string> known{"max_in_flight", "placement",      "weight",
                                                 "ordering",      "on_dead_letter", "rate_limit",
                                                 "activities",    "keep_results"};
        for (const auto& [key, value] : request.items()) {
            if (!known.contains(key)) {
                throw Bad{"unknown field '" + util::sanitize_text(key, 80) + "'"};
            }
        }
        parse_controls(request, settings.controls);
        if (const auto weight = request.find("weight");
            weight != request.end() && !weight->is_null()) {
            if (!weight->is_number_integer() || weight->get<std::int64_t>() < store::kMinWeight ||
                weight->get<std::int64_t>() > store::kMaxWeight) {
                throw Bad{"'weight' must be an integer between " +
                          std::to_string(store::kMinWeight) + " and " +
                          std::to_string(store::kMaxWeight) + " (or null for 1)"};
            }
            settings.weight = weight->get<std::int32_t>();
        }
        if (const auto keep = request.find("keep_results");
            keep != request.end() && !keep->is_null()) {
            if (!keep->is_boolean()) throw Bad{"'keep_results' must be true or false"};
            settings.keep_results = keep->get<bool>();
        }
        if (const auto quota = request.find("max_in_flight");
            quota != request.end() && !quota->is_null()) {
            if (!quota->is_number_integer() || quota->get<std::int64_t>() < 1 ||
                quota->get<std::int64_t>() > INT32_MAX) {
                throw Bad{"'max_in_flight' must be a positive integer (or null for the default)"};
            }
            settings.max_in_flight = quota->get<std::int32_t>();
        }
        if (const auto placement = request.find("placement");
            placement != request.end() && !placement->is_null()) {
            if (!placement->is_object()) throw Bad{"'placement' must be an object"};
            const auto mode = text_field(*placement, "mode", true);
            if (!store::parse_placement_mode(mode, settings.placement.mode)) {
                throw Bad{"'placement.mode' must be unplaced, prefer or pinned"};
            }
            if (const auto nodes = placement->find("nodes");
                nodes != placement->end() && !nodes->is_null()) {
                if (!nodes->is_array()) throw Bad{"'placement.nodes' must be an array of strings"};
                for (const auto& node : *nodes) {
                    if (!node.is_string() || node.get<std::string>().empty()) {
                        throw Bad{"'placement.nodes' must hold non-empty strings"};
                    }
                    settings.placement.nodes.push_back(node.get<std::string>());
                }
            }
            if (settings.placement.mode != store::PlacementMode::unplaced &&
                settings.placement.nodes.empty()) {
                throw Bad{"'placement.nodes' must name at least one node for mode '" + mode + "'"};
            }
        }
    } catch (const Bad& bad) {
        return RowError{"invalid_request", bad.message, {}};
    }
    return settings;
}

}  // namespace outboxd::http
