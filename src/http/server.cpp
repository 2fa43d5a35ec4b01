#include "outboxd/http/server.hpp"

#include <stdexcept>

#include <spdlog/spdlog.h>

#include "http_session.hpp"
#include "server_impl.hpp"
#include "worker_session.hpp"

namespace outboxd::http {

namespace net = boost::asio;
using tcp = net::ip::tcp;

HttpServer::Impl::Impl(net::io_context& ioc_, ServerSettings settings_, NodeServices services_)
    : ioc(ioc_),
      settings(std::move(settings_)),
      services(services_),
      router(ioc_.get_executor(), services_, settings),
      acceptor(ioc_) {}

void HttpServer::Impl::start() {
    boost::system::error_code ec;
    const auto address = net::ip::make_address(settings.host, ec);
    if (ec) throw std::runtime_error("cannot listen on '" + settings.host + "': " + ec.message());
    const tcp::endpoint endpoint{address, settings.port};
    const std::string where = settings.host + ":" + std::to_string(settings.port);
    if (acceptor.open(endpoint.protocol(), ec); ec) {
        throw std::runtime_error("cannot open " + where + ": " + ec.message());
    }
    acceptor.set_option(net::socket_base::reuse_address(true), ec);
    if (acceptor.bind(endpoint, ec); ec) {
        throw std::runtime_error("cannot bind " + where + ": " + ec.message());
    }
    if (acceptor.listen(net::socket_base::max_listen_connections, ec); ec) {
        throw std::runtime_error("cannot listen on " + where + ": " + ec.message());
    }
    accepting = true;
    accept();
}

void HttpServer::Impl::accept() {
    acceptor.async_accept(ioc, [this](boost::system::error_code ec, tcp::socket socket) {
        if (!accepting) return;
        if (ec) {
            spdlog::warn("event=accept_failed error=\"{}\"", ec.message());
        } else {
            // Frames are small and latency-bound: never hold one back waiting for an ACK.
            boost::system::error_code ignored;
            socket.set_option(tcp::no_delay(true), ignored);
            std::make_shared<HttpSession>(std::move(socket), *this)->run();
        }
        accept();
    });
}

HttpServer::HttpServer(net::io_context& ioc, ServerSettings settings, NodeServices services)
    : impl_(std::make_unique<Impl>(ioc, std::move(settings), services)) {}

HttpServer::~HttpServer() = default;

void HttpServer::start() { impl_->start(); }

std::uint16_t HttpServer::port() const {
    boost::system::error_code ec;
    const auto endpoint = impl_->acceptor.local_endpoint(ec);
    return ec ? 0 : endpoint.port();
}

void HttpServer::stop_accepting() {
    impl_->accepting = false;
    boost::system::error_code ec;
    impl_->acceptor.close(ec);
}

void HttpServer::drain_workers() {
    const std::string frame = worker::protocol::encode(worker::protocol::Drain{});
    for (auto& [id, weak] : impl_->workers) {
        if (auto session = weak.lock()) session->send(frame);
    }
}

void HttpServer::broadcast_cluster() {
    worker::protocol::Cluster cluster;
    for (const auto& node : impl_->services.member.nodes()) {
        if (!node.draining) cluster.nodes.push_back({node.node_id, node.advertise_url});
    }
    const std::string frame = worker::protocol::encode(cluster);
    for (auto& [id, weak] : impl_->workers) {
        if (auto session = weak.lock(); session && session->greeted()) session->send(frame);
    }
}

void HttpServer::close_workers() {
    auto workers = impl_->workers;
    for (auto& [id, weak] : workers) {
        if (auto session = weak.lock()) session->close("node shutting down");
    }
}

}  // namespace outboxd::http
