// Dead letters (README, "HTTP API"): listed newest first in pages, requeued or purged one
// at a time or in bulk by a filter.

#include <nlohmann/json.hpp>

#include "api_json.hpp"
#include "api_routes.hpp"
#include "dead_letter_params.hpp"

namespace outboxd::http {
namespace {

using nlohmann::json;

void list(const ApiContext& api, const RouteRequest& r, Respond respond) {
    auto parsed = parse_dead_letter_query(r.target.query, kMaxListLimit);
    if (const auto* error = std::get_if<std::string>(&parsed))
        return respond(error_response(400, "invalid_request", *error));
    api.on_lane(
        [query = std::get<DeadLetterQuery>(std::move(parsed))](store::AdminStores& db) {
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
        api.on_lane(
            [bulk = std::get<DeadLetterBulk>(std::move(parsed)), requeue](store::AdminStores& db) {
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
    api.on_lane(
        [key = r.params[0]](store::AdminStores& db) {
            return db.admin.requeue_dead_letter(key)
                       ? json_response({{"dispatch_key", key}, {"requeued", true}})
                       : not_found("no dead letter with dispatch_key '" + key + "'");
        },
        std::move(respond));
}

}  // namespace

void add_dead_letter_routes(RouteTable& table, const ApiContext& api) {
    table.add(
        {"GET", "/v1/dead-letters", Access::admin,
         [&api](const RouteRequest& r, Respond respond) { list(api, r, std::move(respond)); }});
    table.add({"POST", "/v1/dead-letters/requeue", Access::admin, bulk(api, true)});
    table.add({"POST", "/v1/dead-letters/purge", Access::admin, bulk(api, false)});
    table.add({"POST", "/v1/dead-letters/{key}/requeue", Access::admin,
               [&api](const RouteRequest& r, Respond respond) {
                   requeue_one(api, r, std::move(respond));
               }});
}

}  // namespace outboxd::http
