// Dead letters (README, "HTTP API"): listed newest first in pages, over one database or
// every one, requeued or purged one at a time or in bulk by a filter.

#include <algorithm>

#include <nlohmann/json.hpp>

#include "api_json.hpp"
#include "api_routes.hpp"
#include "dead_letter_params.hpp"

namespace outboxd::http {
namespace {

using nlohmann::json;
using Letters = std::vector<store::DeadLetter>;

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

ApiResponse page(const ApiContext::Parts<Letters>& parts, std::int32_t limit, bool several) {
    std::vector<std::pair<const std::string*, const store::DeadLetter*>> merged;
    for (const auto& [database, letters] : parts) {
        for (const auto& letter : letters) merged.emplace_back(&database, &letter);
    }
    std::sort(merged.begin(), merged.end(), [](const auto& a, const auto& b) {
        return listed_before(*a.first, *a.second, *b.first, *b.second);
    });
    if (merged.size() > static_cast<std::size_t>(limit)) merged.resize(limit);
    json letters = json::array();
    for (const auto& [database, letter] : merged) {
        auto item = dead_letter_json(*letter);
        item["database"] = *database;
        letters.push_back(std::move(item));
    }
    // A full page may have more after it: its last letter is where the next starts.
    json next = nullptr;
    if (static_cast<std::int32_t>(merged.size()) == limit && !merged.empty() &&
        merged.back().second->failed_at) {
        const auto& [database, last] = merged.back();
        next = encode_page_cursor(
            {{*last->failed_at, last->id}, several ? std::optional{*database} : std::nullopt});
    }
    return json_response({{"dead_letters", letters}, {"next", next}});
}

void list(const ApiContext& api, const RouteRequest& r, Respond respond) {
    auto parsed = parse_dead_letter_query(r.target.query, kMaxListLimit);
    if (const auto* error = std::get_if<std::string>(&parsed))
        return respond(error_response(400, "invalid_request", *error));
    auto query = std::get<DeadLetterQuery>(std::move(parsed));
    if (auto refused = scope_filter(query.filter, *r.grant, auth::Role::reader))
        return respond(std::move(*refused));
    const bool several = r.databases.size() > 1;
    if (several && query.after && !query.after->database) {
        return respond(error_response(400, "invalid_request",
                                      "'after' is the cursor of one database's listing; this one "
                                      "spans every database (pass the 'next' of its own pages)"));
    }
    ApiContext::Walk<Letters> plan;
    plan.next = [query](const engine::OutboxEngine& database, const ApiContext::Parts<Letters>&) {
        std::optional<store::DeadLetterCursor> after;
        if (query.after) after = cursor_within(database.name(), *query.after);
        return std::optional<ApiContext::PartJob<Letters>>{[query, after](store::AdminStores& db) {
            return db.admin.list_dead_letters(query.filter, query.limit, after);
        }};
    };
    plan.combine = [limit = query.limit, several](const ApiContext::Parts<Letters>& parts) {
        return page(parts, limit, several);
    };
    api.walk(r.databases, std::move(plan), std::move(respond));
}

// A bulk requeue or purge over the databases named (every one when none is): at most `limit`
// letters over all of them, taken database after database; the count of each, and their sum.
RouteHandler bulk(const ApiContext& api, bool requeue) {
    return [&api, requeue](const RouteRequest& r, Respond respond) {
        auto parsed = parse_dead_letter_bulk(r.request.body);
        if (const auto* error = std::get_if<std::string>(&parsed))
            return respond(error_response(400, "invalid_request", *error));
        auto bulk = std::get<DeadLetterBulk>(std::move(parsed));
        if (auto refused = scope_filter(bulk.filter, *r.grant, auth::Role::operator_))
            return respond(std::move(*refused));
        ApiContext::Walk<std::int64_t> plan;
        plan.audit = ApiContext::audit_of(r, bulk.filter.namespace_name);
        plan.next = [bulk, requeue](const engine::OutboxEngine&,
                                    const ApiContext::Parts<std::int64_t>& so_far)
            -> std::optional<ApiContext::PartJob<std::int64_t>> {
            std::int64_t taken = 0;
            for (const auto& [database, count] : so_far) taken += count;
            if (taken >= bulk.limit) return std::nullopt;
            const auto limit = static_cast<std::int32_t>(bulk.limit - taken);
            return [filter = bulk.filter, limit, requeue](store::AdminStores& db) {
                return requeue ? db.admin.requeue_dead_letters(filter, limit)
                               : db.admin.purge_dead_letters(filter, limit);
            };
        };
        plan.combine = [requeue](const ApiContext::Parts<std::int64_t>& parts) {
            std::int64_t total = 0;
            json by_database = json::object();
            for (const auto& [database, count] : parts) {
                total += count;
                by_database[database] = count;
            }
            return json_response(
                {{requeue ? "requeued" : "purged", total}, {"by_database", by_database}});
        };
        api.walk(r.databases, std::move(plan), std::move(respond));
    };
}

void requeue_one(const ApiContext& api, const RouteRequest& r, Respond respond) {
    api.change(
        r, r.database(), std::nullopt,
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
    table.add({"GET", "/v1/dead-letters", Access::needs(Role::reader),
               [&api](const RouteRequest& r, Respond respond) { list(api, r, std::move(respond)); },
               Databases::any});
    table.add({"POST", "/v1/dead-letters/requeue", Access::needs(Role::operator_), bulk(api, true),
               Databases::any});
    table.add({"POST", "/v1/dead-letters/purge", Access::needs(Role::operator_), bulk(api, false),
               Databases::any});
    table.add({"POST", "/v1/dead-letters/{key}/requeue", Access::needs(Role::operator_),
               [&api](const RouteRequest& r, Respond respond) {
                   requeue_one(api, r, std::move(respond));
               },
               Databases::one});
}

}  // namespace outboxd::http
