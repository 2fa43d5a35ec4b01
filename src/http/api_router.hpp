#pragma once

// The HTTP API routes (README, "HTTP API"). Errors map to status codes here and only here.
// Thread affinity: the loop thread; SQL runs on the API lane.

#include <string>

#include "api_types.hpp"
#include "outboxd/http/server.hpp"
#include "outboxd/util/lifetime.hpp"

namespace outboxd::http {

// Upper bounds of one request.
inline constexpr std::size_t kMaxRowsPerRequest = 10000;
inline constexpr std::int32_t kMaxListLimit = 1000;

class ApiRouter {
public:
    ApiRouter(boost::asio::any_io_executor loop, NodeServices services, ServerSettings settings);

    // Answers `request` through `respond`, on the loop thread, exactly once.
    void handle(const ApiRequest& request, Respond respond);

    // Whether a request for `target` with `bearer` may be read any further: false when its
    // route needs a token it lacks. Decided from the request line and headers alone, so
    // that a body is never read for a client that may not send it. handle() applies the
    // same rules.
    // `upgrade`: the request asks for a WebSocket upgrade.
    [[nodiscard]] bool admits(std::string_view target, const std::optional<std::string>& bearer,
                              bool upgrade) const;

    // JSON of GET /v1/cluster, also used for the workers' cluster frames.
    [[nodiscard]] std::string cluster_json() const;

private:
    using Job = std::function<ApiResponse(store::AdminStores&)>;
    // Runs `job` on the API lane and answers with its result; store errors become 4xx/5xx.
    void on_lane(Job job, Respond respond);
    [[nodiscard]] bool admin_allowed(const std::optional<std::string>& bearer) const;
    [[nodiscard]] bool worker_allowed(const std::optional<std::string>& bearer) const;

    void stage(const ApiRequest& request, Respond respond);
    void put_namespace(const std::string& name, const std::string& body, Respond respond);
    void get_namespace(const std::string& name, Respond respond);
    // GET /v1/namespaces: every namespace's counts and settings.
    void list_namespaces(Respond respond);
    // /v1/http-targets[/{name}] (target_routes.cpp).
    void http_targets(const std::vector<std::string>& seg, const ApiRequest& request,
                      Respond respond);
    // /v1/schedules[/{id}] (schedule_routes.cpp).
    void schedules(const std::vector<std::string>& seg, const ApiRequest& request, Respond respond);

    boost::asio::any_io_executor loop_;
    NodeServices services_;
    ServerSettings settings_;
    util::Lifetime lifetime_;
};

}  // namespace outboxd::http
