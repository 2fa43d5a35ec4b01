#pragma once

// The HTTP API (README, "HTTP API"): its routes in one table (route_table.hpp), filled by one
// file per resource (api_routes.hpp), and who may call what decided once, from that table,
// for the request line and headers (admits(), before a body is read) and for the request
// (handle()). Errors map to status codes here and in ApiContext only.
// Thread affinity: the loop thread; SQL runs on an engine's API lane.

#include <optional>
#include <string>
#include <string_view>

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

    // Whether a request for `target` with `bearer` may be read any further: false when its
    // route needs a token it lacks. Decided from the request line and headers alone, so that
    // a body is never read for a client that may not send it.
    // `upgrade`: the request asks for a WebSocket upgrade (the worker token is the
    // upgrade's to check).
    [[nodiscard]] bool admits(std::string_view target, const std::optional<std::string>& bearer,
                              bool upgrade) const;

private:
    // Who may call `method` (none: any method) on `segments`, from the table.
    [[nodiscard]] Access access_to(std::optional<std::string_view> method,
                                   const std::vector<std::string>& segments) const;
    [[nodiscard]] bool allowed(Access access, const std::optional<std::string>& bearer) const;

    ApiContext api_;
    RouteTable table_;
};

}  // namespace outboxd::http
