// Managed credentials (README, "Security"): created with a secret shown once, listed and
// read without it, deleted. Admin of every namespace only.

#include <nlohmann/json.hpp>

#include "api_json.hpp"
#include "api_routes.hpp"
#include "credential_parser.hpp"
#include "time_format.hpp"

namespace outboxd::http {
namespace {

using nlohmann::json;

json credential_json(const store::CredentialRecord& c, store::TimePoint now) {
    json out = {{"id", c.id},
                {"name", c.name},
                {"namespaces", c.namespaces},
                {"roles", c.roles},
                {"nodes", c.nodes ? json(*c.nodes) : json(nullptr)},
                {"expires_at", optional_time(c.expires_at)},
                {"expired", c.expires_at && *c.expires_at <= now},
                {"created_at", format_rfc3339(c.created_at)},
                {"created_by", c.created_by}};
    return out;
}

store::TimePoint now_of(const ApiContext& api) {
    return std::chrono::time_point_cast<std::chrono::microseconds>(api.services().auth.now());
}

ApiResponse missing(const std::string& id) { return not_found("no credential '" + id + "'"); }

void create(const ApiContext& api, const RouteRequest& r, Respond respond) {
    // On an open node every caller is admin: a credential would scope nothing, and the first
    // one would close the node to the caller who made it.
    if (!api.services().auth.guarded()) {
        return respond(error_response(
            409, "node_open",
            "this node has no credential (no OUTBOXD_ADMIN_TOKEN, OUTBOXD_WORKER_TOKEN or JWT "
            "keys): set OUTBOXD_ADMIN_TOKEN before creating credentials"));
    }
    auto parsed = parse_credential_request(r.request.body, now_of(api));
    if (auto* error = std::get_if<CredentialBodyError>(&parsed)) {
        json body = {{"error", {{"code", "invalid_request"}, {"message", error->message}}}};
        if (!error->field.empty()) body["error"]["field"] = error->field;
        return respond({400, "application/json", json_text(body)});
    }
    auto request = std::get<CredentialRequest>(std::move(parsed));
    const auto made = auth::new_secret();
    store::CredentialRecord record;
    record.id = auth::new_credential_id();
    record.name = std::move(request.name);
    record.secret_sha256 = made.sha256;
    record.namespaces = std::move(request.namespaces);
    record.roles = std::move(request.roles);
    record.nodes = std::move(request.nodes);
    record.expires_at = request.expires_at;
    record.created_by = r.grant->credential_id;
    auto* auth = &api.services().auth;
    auto changed = api.services().credentials_changed;
    api.change(
        r, r.database(), std::nullopt,
        [record, secret = made.secret, now = now_of(api)](store::AdminStores& db) mutable {
            record.created_at = db.access.create_credential(record);
            auto body = credential_json(record, now);
            // Shown once: only its hash is kept.
            body["secret"] = secret;
            return json_response(body, 201);
        },
        // In effect on this node when the answer goes out; on others within their refresh.
        [auth, record, changed](ApiResponse response, const Respond& respond) {
            if (response.status == 201) {
                auth->add_managed(record);
                if (changed) changed();
            }
            respond(std::move(response));
        },
        std::move(respond));
}

void list(const ApiContext& api, const RouteRequest& r, Respond respond) {
    api.on_lane(
        r.database(),
        [now = now_of(api)](store::AdminStores& db) {
            json list = json::array();
            for (const auto& c : db.access.list_credentials().credentials) {
                list.push_back(credential_json(c, now));
            }
            return json_response({{"credentials", list}});
        },
        std::move(respond));
}

void get(const ApiContext& api, const RouteRequest& r, Respond respond) {
    api.on_lane(
        r.database(),
        [id = r.params[0], now = now_of(api)](store::AdminStores& db) {
            const auto found = db.access.get_credential(id);
            return found ? json_response(credential_json(*found, now)) : missing(id);
        },
        std::move(respond));
}

void remove(const ApiContext& api, const RouteRequest& r, Respond respond) {
    auto* auth = &api.services().auth;
    auto changed = api.services().credentials_changed;
    api.change(
        r, r.database(), std::nullopt,
        [id = r.params[0]](store::AdminStores& db) {
            if (!db.access.delete_credential(id)) return missing(id);
            return json_response({{"id", id}, {"deleted", true}});
        },
        // Refused on this node at once; its worker sessions end when the credentials are
        // read again (now), and on other nodes within their refresh.
        [auth, id = r.params[0], changed](ApiResponse response, const Respond& respond) {
            if (response.status == 200) {
                auth->remove_managed(id);
                if (changed) changed();
            }
            respond(std::move(response));
        },
        std::move(respond));
}

}  // namespace

void add_credential_routes(RouteTable& table, const ApiContext& api) {
    const auto admin = Access::needs_everywhere(auth::Role::admin);
    // In the control database, whatever ?database= names.
    const auto control = Databases::control;
    table.add(
        {"POST", "/v1/credentials", admin,
         [&api](const RouteRequest& r, Respond respond) { create(api, r, std::move(respond)); },
         control});
    table.add({"GET", "/v1/credentials", admin,
               [&api](const RouteRequest& r, Respond respond) { list(api, r, std::move(respond)); },
               control});
    table.add({"GET", "/v1/credentials/{id}", admin,
               [&api](const RouteRequest& r, Respond respond) { get(api, r, std::move(respond)); },
               control});
    table.add(
        {"DELETE", "/v1/credentials/{id}", admin,
         [&api](const RouteRequest& r, Respond respond) { remove(api, r, std::move(respond)); },
         control});
}

}  // namespace outboxd::http
