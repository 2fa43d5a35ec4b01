// The outbox's rows (README, "HTTP API"): staging through the API, and one row's state.

#include <nlohmann/json.hpp>

#include "api_json.hpp"
#include "api_routes.hpp"
#include "outboxd/store/store_error.hpp"
#include "outboxd/util/untrusted_text.hpp"
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
    auto rows = std::get<std::vector<store::NewRow>>(std::move(parsed));
    // A producer stages into its own namespaces only: a row for another refuses the batch.
    for (std::size_t i = 0; i < rows.size(); ++i) {
        if (!r.grant->may(auth::Role::producer, rows[i].namespace_name)) {
            auto refused = forbidden(auth::Role::producer,
                                     "namespace '" + util::log_safe(rows[i].namespace_name, 128) +
                                         "' (row " + std::to_string(i) + ")");
            return respond(std::move(refused));
        }
    }
    // Staging is no change an operator makes: the audit log keeps changes, not writes.
    api.on_lane(
        r.database(),
        [rows = std::move(rows)](store::AdminStores& db) {
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

void get(const ApiContext& api, const RouteRequest& r, Respond respond) {
    api.on_lane(
        r.database(),
        [key = r.params[0], grant = r.grant,
         database = r.database().name()](store::AdminStores& db) {
            const auto row = db.admin.find(key);
            // Another tenant's row is as missing as one that never was.
            if (!row || !grant->may(auth::Role::reader, row->namespace_name)) {
                return not_found("no outbox row with dispatch_key '" + key + "'");
            }
            return text_response(with_database(
                row_json(*row, grant->may(auth::Role::read_payloads, row->namespace_name)),
                database));
        },
        std::move(respond));
}

}  // namespace

void add_outbox_routes(RouteTable& table, const ApiContext& api) {
    table.add(
        {"POST", "/v1/outbox", Access::needs(auth::Role::producer),
         [&api](const RouteRequest& r, Respond respond) { stage(api, r, std::move(respond)); },
         Databases::one});
    table.add({"GET", "/v1/outbox/{key}", Access::needs(auth::Role::reader),
               [&api](const RouteRequest& r, Respond respond) { get(api, r, std::move(respond)); },
               Databases::one});
}

}  // namespace outboxd::http
