#include "api_router.hpp"

#include "api_routes.hpp"

#include <nlohmann/json.hpp>
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
    add_credential_routes(table_, api_);
    add_audit_routes(table_, api_);
}

Access ApiRouter::otherwise(const std::vector<std::string>& segments) {
    return !segments.empty() && segments[0] == "v1" ? Access::signed_in() : Access::anyone();
}

ApiRouter::Admitted ApiRouter::admit(const Access& access,
                                     const std::optional<std::string>& bearer) const {
    if (access.kind == Access::Kind::open) return std::make_shared<const auth::Grant>();
    const auto unauthorized = [this](const std::string& why) {
        api_.services().metrics.protocol_errors_total.Add({{"code", "unauthorized"}}).Increment();
        return error_response(401, "unauthorized", why);
    };
    auto result = api_.services().auth.authenticate(bearer, auth::Area::api);
    if (auto* why = std::get_if<std::string>(&result)) return unauthorized(*why);
    auto grant = std::get<std::shared_ptr<const auth::Grant>>(std::move(result));
    // Without a credential, what a node leaves open: everything on an open node; on one
    // with the admin token alone, what a worker may do. Anything else asks for a credential
    // (a 401, as for a bad one: a client without one learns nothing more).
    const bool anonymous = !bearer || bearer->empty();
    const bool allowed = access.kind == Access::Kind::signed_in
                             ? !anonymous || grant->may_everywhere(auth::Role::admin)
                         : access.everywhere
                             ? grant->may_everywhere(access.role)
                             : grant->may_somewhere(access.role) ||
                                   (access.or_role && grant->may_somewhere(*access.or_role));
    if (allowed) return grant;
    if (anonymous) return unauthorized("a valid bearer token is required");
    api_.services().metrics.protocol_errors_total.Add({{"code", "forbidden"}}).Increment();
    return forbidden(access.role, access.everywhere ? "every namespace" : "any namespace");
}

std::optional<ApiResponse> ApiRouter::refusal(std::string_view method, std::string_view target,
                                              const std::optional<std::string>& bearer,
                                              bool upgrade) const {
    const auto parsed = parse_target(target);
    const auto* route = std::get_if<ParsedTarget>(&parsed);
    // A target that does not parse is answered once read, by a credential's holder only.
    const auto segments = route ? route->segments : std::vector<std::string>{"v1"};
    if (upgrade && segments == std::vector<std::string>{"v1", "workers"}) return std::nullopt;
    const auto found = table_.find(method, segments, otherwise(segments));
    auto admitted = admit(found.access, bearer);
    if (auto* refused = std::get_if<ApiResponse>(&admitted)) return std::move(*refused);
    return std::nullopt;
}

void ApiRouter::handle(const ApiRequest& request, Respond respond) {
    const auto parsed = parse_target(request.target);
    if (const auto* error = std::get_if<TargetError>(&parsed)) {
        // A guarded node tells a client without a credential nothing, not even what is wrong.
        auto admitted = admit(Access::signed_in(), request.bearer);
        if (auto* refused = std::get_if<ApiResponse>(&admitted)) return respond(*refused);
        return respond(error_response(400, "bad_target", error->message));
    }
    const auto& target = std::get<ParsedTarget>(parsed);
    auto found = table_.find(request.method, target.segments, otherwise(target.segments));
    // The credential first: a client without one learns nothing, not even which methods
    // the route takes.
    auto admitted = admit(found.access, request.bearer);
    if (auto* refused = std::get_if<ApiResponse>(&admitted)) return respond(*refused);
    if (!found.route) {
        if (found.methods.empty()) {
            return respond(
                not_found("no such route: " + util::sanitize_text(request.target, kEchoBytes)));
        }
        return respond(error_response(
            405, "method_not_allowed",
            request.method + " is not allowed here; use " + methods_text(found.methods)));
    }
    auto databases = api_.databases(found.route->databases, target);
    if (auto* refused = std::get_if<ApiResponse>(&databases)) return respond(std::move(*refused));
    const std::string_view path{request.target.data(),
                                std::min(request.target.find('?'), request.target.size())};
    const RouteRequest route{request,
                             target,
                             std::move(found.params),
                             path.ends_with('/'),
                             std::get<std::shared_ptr<const auth::Grant>>(std::move(admitted)),
                             found.route->pattern,
                             std::get<std::vector<engine::OutboxEngine*>>(std::move(databases))};
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

ApiResponse forbidden(auth::Role role, std::string_view over) {
    const auto name = std::string{auth::role_name(role)};
    const nlohmann::json body = {
        {"error",
         {{"code", "forbidden"},
          {"message", "this credential is not " + name + " of " + std::string{over}},
          {"scope", name}}}};
    return {403, "application/json", json_text(body)};
}

ApiResponse forbidden_in(auth::Role role, std::string_view ns) {
    return forbidden(role, "namespace '" + util::log_safe(ns, 128) + "'");
}

std::optional<ApiResponse> change_refusal(const auth::Grant& grant, const std::string& ns,
                                          const ApiResponse& missing) {
    if (grant.may(auth::Role::operator_, ns)) return std::nullopt;
    if (grant.may(auth::Role::reader, ns)) return forbidden_in(auth::Role::operator_, ns);
    return missing;
}

}  // namespace outboxd::http
