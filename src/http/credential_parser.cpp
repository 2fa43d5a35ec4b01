#include "credential_parser.hpp"

#include <algorithm>
#include <regex>
#include <set>

#include <nlohmann/json.hpp>

#include "outboxd/auth/grant.hpp"
#include "outboxd/util/untrusted_text.hpp"
#include "outboxd/worker/protocol.hpp"
#include "time_format.hpp"

namespace outboxd::http {
namespace {

using nlohmann::json;

struct Bad {
    std::string field;
    std::string message;
};

// A non-empty array of distinct strings, each checked by `valid`, at most `max`.
std::vector<std::string> names(const json& body, const std::string& field, std::size_t max,
                               const auto& valid, const std::string& what) {
    const auto found = body.find(field);
    if (found == body.end() || !found->is_array() || found->empty()) {
        throw Bad{field, "'" + field + "' must be a non-empty array of " + what};
    }
    if (found->size() > max) {
        throw Bad{field, "'" + field + "' holds more than " + std::to_string(max) + " entries"};
    }
    std::vector<std::string> out;
    for (const auto& entry : *found) {
        if (!entry.is_string() || !valid(entry.get<std::string>())) {
            const auto shown = entry.is_string() ? util::sanitize_text(entry.get<std::string>(), 80)
                                                 : entry.dump();
            std::string message = "'" + field + "' holds '";
            message.append(util::sanitize_text(shown, 80)).append("', which is not ").append(what);
            throw Bad{field, message};
        }
        if (std::find(out.begin(), out.end(), entry.get<std::string>()) == out.end()) {
            out.push_back(entry.get<std::string>());
        }
    }
    return out;
}

bool valid_name(const std::string& name) {
    static const std::regex shape{"^[A-Za-z0-9._-]{1,128}$"};
    return std::regex_match(name, shape);
}

}  // namespace

std::variant<CredentialRequest, CredentialBodyError> parse_credential_request(
    const std::string& body, store::TimePoint now) {
    if (util::json_nesting_depth(body, worker::protocol::kMaxNesting) >
        worker::protocol::kMaxNesting) {
        return CredentialBodyError{"", "request body nests too deep"};
    }
    const json request = json::parse(body, nullptr, false);
    if (request.is_discarded()) return CredentialBodyError{"", "request body is not valid JSON"};
    if (!request.is_object()) return CredentialBodyError{"", "request body must be an object"};
    CredentialRequest out;
    try {
        static const std::set<std::string> known{"name", "namespaces", "roles", "expires_at",
                                                 "nodes"};
        for (const auto& [key, value] : request.items()) {
            if (!known.contains(key)) {
                throw Bad{key, "unknown field '" + util::sanitize_text(key, 80) + "'"};
            }
        }
        const auto name = request.find("name");
        if (name == request.end() || !name->is_string() || !valid_name(name->get<std::string>())) {
            throw Bad{"name", "'name' is required: 1-128 of A-Z a-z 0-9 . _ -"};
        }
        out.name = name->get<std::string>();
        out.namespaces = names(
            request, "namespaces", kMaxCredentialNamespaces,
            [](const std::string& ns) { return auth::valid_grant_namespace(ns); },
            "a namespace or \"*\"");
        if (std::find(out.namespaces.begin(), out.namespaces.end(), auth::kAllNamespaces) !=
            out.namespaces.end()) {
            out.namespaces = {std::string{auth::kAllNamespaces}};
        }
        out.roles = names(
            request, "roles", 6,
            [](const std::string& role) { return auth::parse_role(role).has_value(); },
            "a role (worker, producer, reader, read_payloads, operator, admin)");
        if (const auto nodes = request.find("nodes"); nodes != request.end() && !nodes->is_null()) {
            out.nodes = names(
                request, "nodes", kMaxCredentialNodes,
                [](const std::string& node) {
                    return !util::identifier_problem(node, util::kMaxIdentifierBytes);
                },
                "a node label");
        }
        if (const auto expires = request.find("expires_at");
            expires != request.end() && !expires->is_null()) {
            const auto at =
                expires->is_string() ? parse_rfc3339(expires->get<std::string>()) : std::nullopt;
            if (!at) throw Bad{"expires_at", "'expires_at' must be an RFC 3339 time"};
            if (*at <= now) throw Bad{"expires_at", "'expires_at' is not in the future"};
            out.expires_at = at;
        }
    } catch (const Bad& bad) {
        return CredentialBodyError{bad.field, bad.message};
    }
    return out;
}

}  // namespace outboxd::http
