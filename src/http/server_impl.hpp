#pragma once

// State shared by the listener and every session of one HttpServer. Loop thread only.

#include <map>
#include <memory>
#include <string>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/steady_timer.hpp>

#include "api_router.hpp"
#include "outboxd/http/server.hpp"
#include "outboxd/http/upgrade.hpp"
#include "outboxd/util/failure_run.hpp"
#include "outboxd/util/retry_backoff.hpp"

namespace outboxd::http {

class HttpServer::Impl {
public:
    Impl(boost::asio::io_context& ioc, ServerSettings settings, NodeServices services);

    void start();
    void accept();
    // A new connection beyond max_connections: a 503 naming the cap, then closed (closed at
    // once under TLS, or when many refusals are under way already).
    void refuse(boost::asio::ip::tcp::socket socket);
    // Out of descriptors (or another accept error): try again after a backoff, not at once.
    void accept_failed(const boost::system::error_code& ec);
    // One fault in a handler: logged (escaped) and counted; the caller ends its session.
    void fault(std::string_view where, std::string_view what);

    boost::asio::io_context& ioc;
    ServerSettings settings;
    NodeServices services;
    ApiRouter router;
    boost::asio::ip::tcp::acceptor acceptor;
    bool accepting = false;
    // Set when the node serves HTTPS and wss:// (ServerSettings::tls); sessions then run TLS
    // and keep it alive as long as their streams use it (they may outlive the server).
    std::shared_ptr<boost::asio::ssl::context> tls;
    std::shared_ptr<std::size_t> open_connections = std::make_shared<std::size_t>(0);
    std::shared_ptr<std::size_t> refusals_in_flight = std::make_shared<std::size_t>(0);
    util::RetryBackoff accept_backoff;
    util::FailureRun accept_failures;
    boost::asio::steady_timer accept_timer;
};

}  // namespace outboxd::http
