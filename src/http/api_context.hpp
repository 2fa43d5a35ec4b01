#pragma once

// What the API's handlers share: the node's services and settings, and the one way a
// handler reaches its database — a job on an engine's API lane whose store errors become
// 4xx/5xx answers here and only here. Loop thread only.

#include <functional>
#include <string>

#include <boost/asio/any_io_executor.hpp>

#include "api_types.hpp"
#include "outboxd/http/server.hpp"
#include "outboxd/util/lifetime.hpp"
#include "route_table.hpp"

namespace outboxd::http {

// Upper bounds of one request.
inline constexpr std::size_t kMaxRowsPerRequest = 10000;
inline constexpr std::int32_t kMaxListLimit = 1000;

class ApiContext {
public:
    using Job = std::function<ApiResponse(store::AdminStores&)>;

    ApiContext(boost::asio::any_io_executor loop, NodeServices services, ServerSettings settings)
        : loop_(std::move(loop)), services_(std::move(services)), settings_(std::move(settings)) {}

    // The database the API serves.
    [[nodiscard]] engine::OutboxEngine& engine() const { return services_.engines.primary(); }
    [[nodiscard]] const NodeServices& services() const { return services_; }
    [[nodiscard]] const ServerSettings& settings() const { return settings_; }

    // Runs `job` on the API lane and answers with what it returns; store errors become
    // 4xx/5xx; a full lane a 503.
    void on_lane(Job job, Respond respond) const;
    // The same, but the answer goes to `finish` on the loop, which sends it through the
    // Respond it is given, when it will (after taking a change here at once, say).
    using Finish = std::function<void(ApiResponse, Respond)>;
    void on_lane(Job job, Finish finish, Respond respond) const;

    // A change through the API (README, "Security"): runs `job` as on_lane does and, when
    // it answers with a success, records it in the audit log in the same lane job — the
    // caller's credential id, the method, the route, `ns` and what changed (the route's
    // parameters and its body with every secret taken out).
    void change(const RouteRequest& r, std::optional<std::string> ns, Job job,
                Respond respond) const;
    void change(const RouteRequest& r, std::optional<std::string> ns, Job job, Finish finish,
                Respond respond) const;

private:
    boost::asio::any_io_executor loop_;
    NodeServices services_;
    ServerSettings settings_;
    util::Lifetime lifetime_;
};

}  // namespace outboxd::http
