#pragma once

// State shared by the listener and every session of one HttpServer. Loop thread only.

#include <map>
#include <memory>
#include <string>

#include <boost/asio/ip/tcp.hpp>

#include "api_router.hpp"
#include "outboxd/http/server.hpp"

namespace outboxd::http {

class WorkerSession;

class HttpServer::Impl {
public:
    Impl(boost::asio::io_context& ioc, ServerSettings settings, NodeServices services);

    void start();
    void accept();

    boost::asio::io_context& ioc;
    ServerSettings settings;
    NodeServices services;
    ApiRouter router;
    boost::asio::ip::tcp::acceptor acceptor;
    bool accepting = false;
    std::map<std::string, std::weak_ptr<WorkerSession>> workers;  // by session id
};

}  // namespace outboxd::http
