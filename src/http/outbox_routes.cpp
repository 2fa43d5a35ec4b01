// The outbox's rows (README, "HTTP API"): staging through the API, and one row's state.

#include <nlohmann/json.hpp>

#include "api_json.hpp"
#include "api_routes.hpp"
#include "outboxd/store/store_error.hpp"
#include "row_parser.hpp"

namespace outboxd::http {
namespace {

using nlohmann::json;

// POST /v1/outbox: a batch is atomic; a bad row refuses it whole, naming the row.
void stage(const ApiContext& api, const RouteRequest& r, Respond respond) {
    auto parsed = parse_stage_request(r.request.body, kMaxRowsPerRequest);
    if (auto* error = std::get_if<RowError>(&parsed)) {
        json body = {{"error", {{"code", error->code}, {"message", error->message}}}};
        if (error->row) body["error"]["row"] = *error->row;
        return respond({400, "application/json", json_text(body)});
    }
    api.on_lane(
        [rows = std::get<std::vector<store::NewRow>>(std::move(parsed))](store::AdminStores& db) {
            try {
                const auto result = db.admin.append(rows);
                return json_response(
                    {{"staged", result.staged}, {"duplicates", result.duplicates}});
            } catch (const store::ValidationError& error) {
                json body = {{"error", {{"code", "invalid_row"}, {"message", error.what()}}}};
                if (error.row_index()) body["error"]["row"] = *error.row_index();
                return ApiResponse{400, "application/json", json_text(body)};
            }
        },
        std::move(respond));
}

}  // namespace

void add_outbox_routes(RouteTable& table, const ApiContext& api) {
    table.add({"POST", "/v1/outbox", Access::admin, [&api](const RouteRequest& r, Respond respond) {
                   stage(api, r, std::move(respond));
               }});
    table.add(
        {"GET", "/v1/outbox/{key}", Access::admin, [&api](const RouteRequest& r, Respond respond) {
             api.on_lane(
                 [key = r.params[0]](store::AdminStores& db) {
                     const auto row = db.admin.find(key);
                     return row ? text_response(row_json(*row))
                                : not_found("no outbox row with dispatch_key '" + key + "'");
                 },
                 std::move(respond));
         }});
}

}  // namespace outboxd::http
