// Dead letters (README, "HTTP API"): listed newest first in pages, requeued or purged one
// at a time or in bulk by a filter.

#include <nlohmann/json.hpp>

#include "api_json.hpp"
#include "api_routes.hpp"
#include "dead_letter_params.hpp"

namespace outboxd::http {
namespace {

using nlohmann::json;

// Keeps `filter` to the namespaces `grant` holds `role` over; the refusal when it names
// another one.
std::optional<ApiResponse> scope_filter(store::DeadLetterFilter& filter, const auth::Grant& grant,
                                        auth::Role role) {
    if (filter.namespace_name && !grant.may(role, *filter.namespace_name)) {
        return forbidden_in(role, *filter.namespace_name);
    }
    filter.within_namespaces = grant.namespaces_for(role);
    return std::nullopt;
}

void list(const ApiContext& api, const RouteRequest& r, Respond respond) {
    auto parsed = parse_dead_letter_query(r.target.query, kMaxListLimit);
    if (const auto* error = std::get_if<std::string>(&parsed))
        return respond(error_response(400, "invalid_request", *error));
    auto query = std::get<DeadLetterQuery>(std::move(parsed));
    if (auto refused = scope_filter(query.filter, *r.grant, auth::Role::reader))
        return respond(std::move(*refused));
    api.on_lane(
        [query = std::move(query)](store::AdminStores& db) {
            json letters = json::array();
            const auto found = db.admin.list_dead_letters(query.filter, query.limit, query.after);
            for (const auto& letter : found) letters.push_back(dead_letter_json(letter));
            // A full page may have more after it: its last letter is where the next starts.
            json next = nullptr;
            if (static_cast<std::int32_t>(found.size()) == query.limit && !found.empty() &&
                found.back().failed_at) {
                next = encode_cursor({*found.back().failed_at, found.back().id});
            }
            return json_response({{"dead_letters", letters}, {"next", next}});
        },
        std::move(respond));
}

RouteHandler bulk(const ApiContext& api, bool requeue) {
    return [&api, requeue](const RouteRequest& r, Respond respond) {
        auto parsed = parse_dead_letter_bulk(r.request.body);
        if (const auto* error = std::get_if<std::string>(&parsed))
            return respond(error_response(400, "invalid_request", *error));
        auto bulk = std::get<DeadLetterBulk>(std::move(parsed));
        if (auto refused = scope_filter(bulk.filter, *r.grant, auth::Role::operator_))
            return respond(std::move(*refused));
        auto ns = bulk.filter.namespace_name;
        api.change(
            r, std::move(ns),
            [bulk = std::move(bulk), requeue](store::AdminStores& db) {
                if (requeue) {
                    return json_response(
                        {{"requeued", db.admin.requeue_dead_letters(bulk.filter, bulk.limit)}});
                }
                return json_response(
                    {{"purged", db.admin.purge_dead_letters(bulk.filter, bulk.limit)}});
            },
            std::move(respond));
    };
}

void requeue_one(const ApiContext& api, const RouteRequest& r, Respond respond) {
    api.change(
        r, std::nullopt,
        [key = r.params[0], grant = r.grant](store::AdminStores& db) {
            const auto missing = [&key] {
                return not_found("no dead letter with dispatch_key '" + key + "'");
            };
            // Another tenant's dead letter is as missing as one that never was.
            if (!grant->may_everywhere(auth::Role::operator_)) {
                const auto row = db.admin.find(key);
                if (!row || !grant->may(auth::Role::operator_, row->namespace_name)) {
                    return missing();
                }
            }
            return db.admin.requeue_dead_letter(key)
                       ? json_response({{"dispatch_key", key}, {"requeued", true}})
                       : missing();
        },
        std::move(respond));
}

}  // namespace

void add_dead_letter_routes(RouteTable& table, const ApiContext& api) {
    using auth::Role;
    table.add(
        {"GET", "/v1/dead-letters", Access::needs(Role::reader),
         [&api](const RouteRequest& r, Respond respond) { list(api, r, std::move(respond)); }});
    table.add(
        {"POST", "/v1/dead-letters/requeue", Access::needs(Role::operator_), bulk(api, true)});
    table.add({"POST", "/v1/dead-letters/purge", Access::needs(Role::operator_), bulk(api, false)});
    table.add({"POST", "/v1/dead-letters/{key}/requeue", Access::needs(Role::operator_),
               [&api](const RouteRequest& r, Respond respond) {
                   requeue_one(api, r, std::move(respond));
               }});
}

}  // namespace outboxd::http
