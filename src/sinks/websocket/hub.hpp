#pragma once

// What every worker session of a node shares (WebSocketSinks::Hub): the settings, the port
// it attaches through, the metrics, what welcomes say of the cluster, and the open sessions
// (for drain, cluster frames and the close at stop). Internal to src/sinks/websocket.
// Loop thread only.

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "outboxd/http/upgrade.hpp"
#include "outboxd/sinks/websocket/websocket_sinks.hpp"

namespace outboxd::sinks {

namespace websocket {

// What the hub asks of any worker session, whatever its transport.
class SessionBase : public Sink {
public:
    [[nodiscard]] virtual bool greeted() const = 0;
    // The grant of the credential the connection presented.
    [[nodiscard]] virtual const auth::Grant& grant() const = 0;
    // Ends the session with an error frame of `code` (a credential revoked, say).
    virtual void end(std::string_view code, const std::string& message) = 0;
    // Queues one encoded frame (drain, cluster updates).
    virtual void send(std::string frame) = 0;
};

}  // namespace websocket

class WebSocketSinks::Hub final : public http::UpgradeHandler {
public:
    Hub(const WebSocketSettings& settings, SinkPort& port, metrics::NodeMetrics& metrics,
        std::function<ClusterInfo()> cluster)
        : settings(settings), port(port), metrics(metrics), cluster(std::move(cluster)) {}

    void upgrade(http::PlainStream stream, http::UpgradeRequest request,
                 std::unique_ptr<http::ConnectionSlot> slot,
                 std::shared_ptr<const auth::Grant> grant) override;
    void upgrade(http::TlsStream stream, http::UpgradeRequest request,
                 std::unique_ptr<http::ConnectionSlot> slot,
                 std::shared_ptr<boost::asio::ssl::context> tls,
                 std::shared_ptr<const auth::Grant> grant) override;

    // One fault in a handler: logged (escaped) and counted; the caller ends its session.
    void fault(std::string_view what);

    WebSocketSettings settings;
    SinkPort& port;
    metrics::NodeMetrics& metrics;
    std::function<ClusterInfo()> cluster;
    std::map<std::string, std::weak_ptr<websocket::SessionBase>> sessions;  // by session id
};

}  // namespace outboxd::sinks
