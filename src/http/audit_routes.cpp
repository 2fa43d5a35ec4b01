// The audit log (README, "Security"): every change made through the API, in whichever
// database, newest first, in pages, from the control database. Admin of every namespace only.

#include <nlohmann/json.hpp>

#include "api_json.hpp"
#include "api_routes.hpp"
#include "time_format.hpp"

namespace outboxd::http {
namespace {

using nlohmann::json;

// ?after=<id>: the page after the one that ended there.
std::variant<std::optional<std::int64_t>, ApiResponse> parse_after(
    const std::map<std::string, std::string>& query) {
    const auto it = query.find("after");
    if (it == query.end()) return std::optional<std::int64_t>{};
    try {
        std::size_t used = 0;
        const auto value = std::stoll(it->second, &used);
        if (used == it->second.size() && value > 0) return std::optional<std::int64_t>{value};
    } catch (const std::exception&) {
    }
    return error_response(400, "invalid_request", "after must be a positive integer (a 'next')");
}

void list(const ApiContext& api, const RouteRequest& r, Respond respond) {
    const auto limit = parse_limit(r.target.query);
    if (!limit) return respond(bad_limit());
    auto after = parse_after(r.target.query);
    if (auto* bad = std::get_if<ApiResponse>(&after)) return respond(std::move(*bad));
    api.on_lane(
        r.database(),
        [limit = *limit,
         before = std::get<std::optional<std::int64_t>>(after)](store::AdminStores& db) {
            const auto entries = db.access.audit(limit, before);
            std::string text = R"({"audit":[)";
            for (std::size_t i = 0; i < entries.size(); ++i) {
                const auto& e = entries[i];
                auto fields = json_text(json{{"id", e.id},
                                             {"at", format_rfc3339(e.at)},
                                             {"credential_id", e.credential_id},
                                             {"method", e.method},
                                             {"route", e.route},
                                             {"namespace", optional_json(e.namespace_name)},
                                             {"database", optional_json(e.database)}});
                fields.pop_back();
                if (i > 0) text += ',';
                // The change as stored (jsonb text, built by the node).
                text += fields + R"(,"change":)" + e.change_json + "}";
            }
            const bool full = static_cast<std::int32_t>(entries.size()) == limit;
            text += "],\"next\":";
            text += full && !entries.empty() ? json(std::to_string(entries.back().id)).dump()
                                             : std::string{"null"};
            return text_response(text + "}");
        },
        std::move(respond));
}

}  // namespace

void add_audit_routes(RouteTable& table, const ApiContext& api) {
    table.add({"GET", "/v1/audit", Access::needs_everywhere(auth::Role::admin),
               [&api](const RouteRequest& r, Respond respond) { list(api, r, std::move(respond)); },
               Databases::control});
}

}  // namespace outboxd::http
