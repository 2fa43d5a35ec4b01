#include "api_router.hpp"

#include "api_routes.hpp"
#include "outboxd/util/untrusted_text.hpp"

namespace outboxd::http {
namespace {

// How much of a request's own target an error message echoes.
constexpr std::size_t kEchoBytes = 200;

std::string methods_text(const std::vector<std::string>& methods) {
    std::string text;
    for (std::size_t i = 0; i < methods.size(); ++i) {
        if (i > 0) text += i + 1 == methods.size() ? " or " : ", ";
        text += methods[i];
    }
    return text;
}

}  // namespace

ApiRouter::ApiRouter(boost::asio::any_io_executor loop, NodeServices services,
                     ServerSettings settings)
    : api_(std::move(loop), std::move(services), std::move(settings)) {
    add_node_routes(table_, api_);
    add_ui_routes(table_);
    add_outbox_routes(table_, api_);
    add_workflow_routes(table_, api_);
    add_dead_letter_routes(table_, api_);
    add_namespace_routes(table_, api_);
    add_target_routes(table_, api_);
    add_schedule_routes(table_, api_);
}

Access ApiRouter::access_to(std::optional<std::string_view> method,
                            const std::vector<std::string>& segments) const {
    // A path no route serves: an admin's under /v1 (a guarded node tells a client without
    // the token nothing, not even which paths exist), anyone's elsewhere (a 404).
    const auto unknown = !segments.empty() && segments[0] == "v1" ? Access::admin : Access::open;
    return table_.find(method.value_or(""), segments, unknown).access;
}

bool ApiRouter::allowed(Access access, const std::optional<std::string>& bearer) const {
    const auto& settings = api_.settings();
    const bool admin = !settings.admin_token || token_matches(bearer, *settings.admin_token);
    switch (access) {
        case Access::open:
            return true;
        case Access::worker:
            return admin || !settings.worker_token || token_matches(bearer, *settings.worker_token);
        case Access::admin:
            return admin;
    }
    return false;
}

bool ApiRouter::admits(std::string_view target, const std::optional<std::string>& bearer,
                       bool upgrade) const {
    const auto parsed = parse_target(target);
    const auto* route = std::get_if<ParsedTarget>(&parsed);
    if (!route) return allowed(Access::admin, bearer);
    // The upgrade checks the worker token itself.
    if (upgrade && route->segments == std::vector<std::string>{"v1", "workers"}) return true;
    return allowed(access_to(std::nullopt, route->segments), bearer);
}

void ApiRouter::handle(const ApiRequest& request, Respond respond) {
    const auto parsed = parse_target(request.target);
    if (const auto* error = std::get_if<TargetError>(&parsed)) {
        // A guarded node tells a client without the token nothing, not even what is wrong.
        if (!allowed(Access::admin, request.bearer)) {
            return respond(
                error_response(401, "unauthorized", "a valid admin bearer token is required"));
        }
        return respond(error_response(400, "bad_target", error->message));
    }
    const auto& target = std::get<ParsedTarget>(parsed);
    const auto unknown =
        !target.segments.empty() && target.segments[0] == "v1" ? Access::admin : Access::open;
    auto found = table_.find(request.method, target.segments, unknown);
    // The token first: a client without one learns nothing, not even which methods the
    // route takes.
    if (!allowed(found.access, request.bearer)) {
        api_.services().metrics.protocol_errors_total.Add({{"code", "unauthorized"}}).Increment();
        return respond(error_response(401, "unauthorized",
                                      found.access == Access::admin
                                          ? "a valid admin bearer token is required"
                                          : "a valid bearer token is required"));
    }
    if (!found.route) {
        if (found.methods.empty()) {
            return respond(
                not_found("no such route: " + util::sanitize_text(request.target, kEchoBytes)));
        }
        return respond(error_response(
            405, "method_not_allowed",
            request.method + " is not allowed here; use " + methods_text(found.methods)));
    }
    const std::string_view path{request.target.data(),
                                std::min(request.target.find('?'), request.target.size())};
    const RouteRequest route{request, target, std::move(found.params), path.ends_with('/')};
    found.route->handler(route, std::move(respond));
}

std::optional<std::int32_t> parse_limit(const std::map<std::string, std::string>& query) {
    const auto it = query.find("limit");
    if (it == query.end()) return 100;
    try {
        std::size_t used = 0;
        const int value = std::stoi(it->second, &used);
        if (used != it->second.size() || value < 1 || value > kMaxListLimit) return std::nullopt;
        return value;
    } catch (const std::exception&) {
        return std::nullopt;
    }
}

ApiResponse bad_limit() {
    return error_response(
        400, "invalid_request",
        "limit must be an integer between 1 and " + std::to_string(kMaxListLimit));
}

ApiResponse not_found(std::string_view what) { return error_response(404, "not_found", what); }

}  // namespace outboxd::http
