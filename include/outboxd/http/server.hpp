#pragma once

// The node's one listening port: the HTTP API (README, "HTTP API"), /metrics, and the worker
// WebSocket endpoint /v1/workers (README, "Worker protocol"), on Boost.Beast. An upgrade of
// /v1/workers whose credential may be a worker is handed to NodeServices::workers (the WebSocket
// sinks).
//
// Thread affinity: everything runs on the io_context's single loop thread; database work
// goes to an engine's API lane and its result is posted back. Beast stays behind this header.

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <boost/asio/io_context.hpp>

#include "outboxd/auth/authenticator.hpp"
#include "outboxd/config/defaults.hpp"
#include "outboxd/engine/engine_directory.hpp"
#include "outboxd/metrics/node_metrics.hpp"

namespace prometheus {
class Registry;
}

namespace outboxd::http {

class UpgradeHandler;

// The certificate chain and private key (PEM files) of a node that serves HTTPS and wss://.
struct TlsFiles {
    std::string cert_file;
    std::string key_file;
};

struct ServerSettings {
    std::string host = "0.0.0.0";
    std::uint16_t port = defaults::kPort;  // 0: any free port
    std::size_t max_body_bytes = defaults::kMaxBodyBytes;
    std::size_t max_connections = defaults::kMaxConnections;  // HTTP + WebSocket; more get a 503
    std::chrono::milliseconds http_idle_timeout{defaults::kHttpIdleTimeout};
    std::int64_t default_max_in_flight = defaults::kDefaultMaxInFlight;
    std::optional<TlsFiles> tls;  // set: every connection on the listen address is TLS
    // Names the node goes by besides its addresses and localhost (the advertised host): a
    // node without credentials answers browsers only at these (origin_check).
    std::vector<std::string> node_hosts;
    // GET /metrics needs a credential that is reader of every namespace.
    bool metrics_private = false;
    // The database that holds the credentials and the audit log (OUTBOXD_CONTROL_DATABASE);
    // empty: the first one.
    std::string control_database;
};

// The host of a URL's authority, lower case ("[::1]:8080" -> "::1", "Node-1:80" -> "node-1").
[[nodiscard]] std::string host_of(std::string_view authority);

// What the server drives; all of it lives on the loop thread and outlives the server.
struct NodeServices {
    engine::EngineDirectory& engines;  // the databases the API reaches
    prometheus::Registry& metrics_registry;
    metrics::NodeMetrics& metrics;
    std::function<bool()> ready;        // database reachable, migrations applied, node registered
    UpgradeHandler* workers = nullptr;  // /v1/workers; without it the endpoint is a 404
    auth::Authenticator& auth;          // who a bearer is (README, "Security")
    // Reads the managed credentials again (after the API changed them) and ends the worker
    // sessions of those gone.
    std::function<void()> credentials_changed;
};

class HttpServer {
public:
    // Loads the TLS files when set. Throws std::runtime_error naming the setting of a file
    // that cannot be used.
    HttpServer(boost::asio::io_context& ioc, ServerSettings settings, NodeServices services);
    ~HttpServer();

    // Binds and starts accepting. Throws std::runtime_error naming the address on failure.
    void start();
    [[nodiscard]] std::uint16_t port() const;
    void stop_accepting();

    class Impl;

private:
    std::unique_ptr<Impl> impl_;
};

}  // namespace outboxd::http
