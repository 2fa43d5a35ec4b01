#pragma once

// What the HTTP server hands over when a connection upgrades to a WebSocket at
// GET /v1/workers (the worker protocol, README, "Worker protocol"): the stream, the upgrade
// request, the connection's slot under OUTBOXD_MAX_CONNECTIONS and the grant of the
// credential it presented (the server checked that it may be a worker of some namespace;
// which namespaces a hello may name is the handler's to check). What the connection then
// carries is the handler's (a sink kind: sinks/websocket).
//
// Beast's types: included by the server's sessions and the WebSocket sink only.
// Thread affinity: the loop thread.

#include <cstddef>
#include <memory>

#include <boost/asio/ssl/context.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>

#include "outboxd/auth/grant.hpp"

namespace prometheus {
class Gauge;
}

namespace outboxd::http {

// The two transports a node serves on its listen address: plain TCP, or TLS (HTTPS and
// wss://) when OUTBOXD_TLS_CERT_FILE and OUTBOXD_TLS_KEY_FILE are set.
using PlainStream = boost::beast::tcp_stream;
using TlsStream = boost::beast::ssl_stream<boost::beast::tcp_stream>;
using UpgradeRequest = boost::beast::http::request<boost::beast::http::string_body>;

// Counts one open connection for as long as it lives; the session that owns the socket
// holds it (an HTTP session, then the WebSocket session it upgrades to). Shares the count
// with the server, so it may outlive it (sessions die with the io_context).
class ConnectionSlot {
public:
    ConnectionSlot(std::shared_ptr<std::size_t> open, prometheus::Gauge& gauge);
    ~ConnectionSlot();
    ConnectionSlot(const ConnectionSlot&) = delete;
    ConnectionSlot& operator=(const ConnectionSlot&) = delete;

private:
    std::shared_ptr<std::size_t> open_;
    prometheus::Gauge& gauge_;
};

class UpgradeHandler {
public:
    virtual ~UpgradeHandler() = default;
    // Takes over an upgraded connection. `tls` keeps the TLS context alive as long as the
    // stream uses it (set for TlsStream).
    virtual void upgrade(PlainStream stream, UpgradeRequest request,
                         std::unique_ptr<ConnectionSlot> slot,
                         std::shared_ptr<const auth::Grant> grant) = 0;
    virtual void upgrade(TlsStream stream, UpgradeRequest request,
                         std::unique_ptr<ConnectionSlot> slot,
                         std::shared_ptr<boost::asio::ssl::context> tls,
                         std::shared_ptr<const auth::Grant> grant) = 0;
};

}  // namespace outboxd::http
