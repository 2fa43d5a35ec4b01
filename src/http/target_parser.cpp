#include "target_parser.hpp"

#include <set>

#include <nlohmann/json.hpp>

#include "outboxd/util/untrusted_text.hpp"
#include "outboxd/worker/protocol.hpp"

namespace outboxd::http {

namespace {

using nlohmann::json;

struct Bad {
    std::string field;
    std::string message;
};

std::string text(const json& body, const char* field, bool required, std::string fallback = {}) {
    const auto it = body.find(field);
    if (it == body.end() || it->is_null()) {
        if (required) throw Bad{field, "'" + std::string{field} + "' is required"};
        return fallback;
    }
    if (!it->is_string()) throw Bad{field, "'" + std::string{field} + "' must be a string"};
    return it->get<std::string>();
}

std::int32_t integer(const json& body, const char* field, std::int32_t fallback, std::int64_t max) {
    const auto it = body.find(field);
    if (it == body.end() || it->is_null()) return fallback;
    if (!it->is_number_integer() || it->get<std::int64_t>() < 1 || it->get<std::int64_t>() > max) {
        throw Bad{field, "'" + std::string{field} + "' must be an integer between 1 and " +
                             std::to_string(max)};
    }
    return it->get<std::int32_t>();
}

}  // namespace

std::variant<TargetRequest, TargetBodyError> parse_target_request(
    const std::string& name, const std::string& body, const sinks::targets::HostPolicy& policy,
    std::optional<std::string_view> only_kind) {
    if (util::json_nesting_depth(body, worker::protocol::kMaxNesting) >
        worker::protocol::kMaxNesting) {
        return TargetBodyError{"invalid_json", "", "request body nests too deep"};
    }
    const json request = json::parse(body, nullptr, false);
    if (request.is_discarded()) {
        return TargetBodyError{"invalid_json", "", "request body is not valid JSON"};
    }
    if (!request.is_object()) {
        return TargetBodyError{"invalid_request", "", "request body must be an object"};
    }
    TargetRequest parsed;
    auto& target = parsed.target;
    target.name = name;
    try {
        target.kind = text(request, "kind", false, "http");
        if (only_kind && target.kind != *only_kind) {
            throw Bad{"kind", "this route takes " + std::string{*only_kind} +
                                  " targets only: use /v1/targets/{name}"};
        }
        const auto* kind = sinks::targets::find_kind(target.kind);
        if (kind == nullptr) {
            std::string known;
            for (const auto* each : sinks::targets::kinds()) {
                known += (known.empty() ? "" : ", ") + std::string{each->name()};
            }
            throw Bad{"kind", "'kind' must be one of " + known};
        }
        std::set<std::string> known{
            "namespace",      "task_queue", "activity_types", "url",  "max_in_flight", "timeout_ms",
            "signing_secret", "headers",    "ca_file",        "name", "kind"};
        for (const auto& option : kind->options()) known.emplace(option.name);
        for (const auto& credential : kind->credentials()) known.emplace(credential);
        for (const auto& [key, value] : request.items()) {
            if (!known.contains(key)) {
                throw Bad{key, "unknown field '" + util::sanitize_text(key, 80) + "' for " +
                                   std::string{kind->name()} + " targets"};
            }
        }
        for (const auto& option : kind->options()) {
            const std::string field{option.name};
            const auto it = request.find(field);
            if (it == request.end() || it->is_null()) continue;
            if (option.boolean) {
                if (!it->is_boolean()) throw Bad{field, "'" + field + "' must be true or false"};
                target.options[field] = it->get<bool>() ? "true" : "false";
            } else {
                target.options[field] = text(request, option.name.data(), true);
            }
        }
        for (const auto& credential : kind->credentials()) {
            const std::string field{credential};
            const auto it = request.find(field);
            // Left out, the stored one stays (GET never shows it); null clears it.
            if (it == request.end()) {
                parsed.kept_credentials.push_back(field);
            } else if (!it->is_null()) {
                if (!it->is_string()) throw Bad{field, "'" + field + "' must be a string"};
                target.credentials[field] = it->get<std::string>();
            }
        }
        if (const auto given = request.find("name"); given != request.end()) {
            if (!given->is_string() || given->get<std::string>() != name) {
                throw Bad{"name", "'name' must match the name in the path ('" +
                                      util::sanitize_text(name, 130) + "') when given"};
            }
        }
        target.namespace_name = text(request, "namespace", false, "default");
        target.task_queue = text(request, "task_queue", false, "default");
        // Left out (or null, or []): every type of the namespace and task queue.
        auto types = request.find("activity_types");
        if (types != request.end() && !types->is_null() && !types->is_array()) {
            throw Bad{"activity_types", "'activity_types' must be an array of strings"};
        }
        if (types == request.end() || types->is_null()) types = request.end();
        for (const auto& type : types == request.end() ? nlohmann::json::array() : *types) {
            if (!type.is_string()) {
                throw Bad{"activity_types", "'activity_types' must be an array of strings"};
            }
            target.activity_types.push_back(type.get<std::string>());
        }
        target.url = text(request, "url", true);
        target.max_in_flight = integer(request, "max_in_flight", 64, http_push::kMaxTargetInFlight);
        target.timeout_ms = integer(request, "timeout_ms", 30000, http_push::kMaxTargetTimeoutMs);
        // Left out, the stored secret stays: GET never shows it, so a client that writes back
        // what it read must not erase it. null clears it.
        if (const auto secret = request.find("signing_secret"); secret == request.end()) {
            parsed.signing_secret = store::SecretUpdate::keep;
        } else if (!secret->is_null()) {
            if (!secret->is_string()) {
                throw Bad{"signing_secret", "'signing_secret' must be a string"};
            }
            target.signing_secret = secret->get<std::string>();
        }
        if (const auto headers = request.find("headers");
            headers != request.end() && !headers->is_null()) {
            if (!headers->is_object()) {
                throw Bad{"headers", "'headers' must be an object of header names to strings"};
            }
            for (const auto& [header, value] : headers->items()) {
                if (!value.is_string()) {
                    throw Bad{"headers", "the value of header '" + util::sanitize_text(header, 80) +
                                             "' must be a string"};
                }
                // What GET shows in place of a value, written back: storing it would send it.
                if (value.get<std::string>() == kRedactedValue) {
                    throw Bad{"headers", "the value of header '" + util::sanitize_text(header, 80) +
                                             "' is '" + std::string{kRedactedValue} +
                                             "', which GET shows in place of values: send the "
                                             "value itself"};
                }
                target.headers.emplace_back(header, value.get<std::string>());
            }
        }
        if (const auto ca = request.find("ca_file"); ca != request.end() && !ca->is_null()) {
            if (!ca->is_string()) throw Bad{"ca_file", "'ca_file' must be a string"};
            target.ca_file = ca->get<std::string>();
        }
        kind->normalize(target);
        std::erase_if(parsed.kept_credentials,
                      [&](const std::string& field) { return target.credentials.contains(field); });
    } catch (const Bad& bad) {
        return TargetBodyError{"invalid_request", bad.field, bad.message};
    }
    if (auto problem = sinks::targets::check_target(target, policy)) {
        return TargetBodyError{"invalid_request", problem->field, problem->message};
    }
    return parsed;
}

}  // namespace outboxd::http
