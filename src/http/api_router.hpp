#pragma once

// The HTTP API (README, "HTTP API"): its routes in one table (route_table.hpp), filled by one
// file per resource (api_routes.hpp), and who may call what decided once, from that table
// and the caller's grant (README, "Security"), for the request line and headers (admit(),
// before a body is read) and for the request (handle()). What a route's grant reaches of
// each namespace its handler checks. Errors map to status codes here and in ApiContext only.
// Thread affinity: the loop thread; SQL runs on an engine's API lane.

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include "api_context.hpp"
#include "api_types.hpp"
#include "route_table.hpp"

namespace outboxd::http {

class ApiRouter {
public:
    ApiRouter(boost::asio::any_io_executor loop, NodeServices services, ServerSettings settings);
    ApiRouter(const ApiRouter&) = delete;
    ApiRouter& operator=(const ApiRouter&) = delete;

    // Answers `request` through `respond`, on the loop thread, exactly once.
    void handle(const ApiRequest& request, Respond respond);

    // Whether a request for `method` `target` with `bearer` may be read any further: the
    // refusal (401 or 403) when its route needs a credential or role it lacks. Decided from
    // the request line and headers alone, so that a body is never read for a client that
    // may not send it. An upgrade of /v1/workers is the WebSocket sink's to judge.
    [[nodiscard]] std::optional<ApiResponse> refusal(std::string_view method,
                                                     std::string_view target,
                                                     const std::optional<std::string>& bearer,
                                                     bool upgrade) const;

private:
    using Admitted = std::variant<std::shared_ptr<const auth::Grant>, ApiResponse>;
    // The grant `bearer` calls `access` with, or the answer that refuses it.
    [[nodiscard]] Admitted admit(const Access& access,
                                 const std::optional<std::string>& bearer) const;
    // What a path no route takes is guarded by: a credential under /v1 (a guarded node tells
    // a client without one nothing, not even which paths exist); nothing elsewhere.
    [[nodiscard]] static Access otherwise(const std::vector<std::string>& segments);

    ApiContext api_;
    RouteTable table_;
};

}  // namespace outboxd::http
