#include "tcp_proxy.hpp"

#include <array>
#include <future>
#include <set>
#include <thread>

#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>

namespace outboxd::test {

namespace net = boost::asio;
using tcp = net::ip::tcp;

namespace {

// Copies bytes one way until either side fails, then closes both.
struct Pipe : std::enable_shared_from_this<Pipe> {
    Pipe(std::shared_ptr<tcp::socket> from, std::shared_ptr<tcp::socket> to)
        : from(std::move(from)), to(std::move(to)) {}
    void run() {
        from->async_read_some(net::buffer(buffer),
                              [self = shared_from_this()](auto ec, std::size_t n) {
                                  if (ec) return self->stop();
                                  net::async_write(*self->to, net::buffer(self->buffer, n),
                                                   [self](auto ec2, std::size_t) {
                                                       if (ec2) return self->stop();
                                                       self->run();
                                                   });
                              });
    }
    void stop() {
        boost::system::error_code ignored;
        from->close(ignored);
        to->close(ignored);
    }
    std::shared_ptr<tcp::socket> from;
    std::shared_ptr<tcp::socket> to;
    std::array<char, 16384> buffer{};
};

}  // namespace

struct TcpProxy::Impl : std::enable_shared_from_this<TcpProxy::Impl> {
    explicit Impl(std::uint16_t target) : target_port(target) {}

    void listen() {
        acceptor = std::make_unique<tcp::acceptor>(ioc);
        const tcp::endpoint endpoint{net::ip::make_address("127.0.0.1"), port};
        acceptor->open(endpoint.protocol());
        acceptor->set_option(net::socket_base::reuse_address(true));
        acceptor->bind(endpoint);
        acceptor->listen();
        port = acceptor->local_endpoint().port();
        accept();
    }

    void accept() {
        acceptor->async_accept([self = shared_from_this(), acceptor = acceptor.get()](
                                   boost::system::error_code ec, tcp::socket socket) {
            if (ec || acceptor != self->acceptor.get()) return;
            auto client = std::make_shared<tcp::socket>(std::move(socket));
            auto server = std::make_shared<tcp::socket>(self->ioc);
            server->async_connect(
                tcp::endpoint{net::ip::make_address("127.0.0.1"), self->target_port},
                [self, client, server](boost::system::error_code ec2) {
                    if (ec2) return;
                    self->sockets.insert(client);
                    self->sockets.insert(server);
                    std::make_shared<Pipe>(client, server)->run();
                    std::make_shared<Pipe>(server, client)->run();
                });
            self->accept();
        });
    }

    void cut() {
        boost::system::error_code ignored;
        if (acceptor) acceptor->close(ignored);
        acceptor.reset();
        // Reset (linger 0) rather than close: no FIN_WAIT sockets keep the port busy.
        for (const auto& socket : sockets) {
            socket->set_option(net::socket_base::linger(true, 0), ignored);
            socket->close(ignored);
        }
        sockets.clear();
    }

    net::io_context ioc;
    std::uint16_t target_port;
    std::uint16_t port = 0;
    std::unique_ptr<tcp::acceptor> acceptor;
    std::set<std::shared_ptr<tcp::socket>> sockets;
    std::unique_ptr<net::executor_work_guard<net::io_context::executor_type>> work;
    std::thread thread;
};

namespace {

// Runs `f` on the proxy's thread and waits for it.
template <typename F>
void on_proxy(const std::shared_ptr<TcpProxy::Impl>& impl, F f) {
    std::promise<void> done;
    net::post(impl->ioc, [&] {
        f();
        done.set_value();
    });
    done.get_future().wait();
}

}  // namespace

TcpProxy::TcpProxy(std::uint16_t target_port) : impl_(std::make_shared<Impl>(target_port)) {
    impl_->work = std::make_unique<net::executor_work_guard<net::io_context::executor_type>>(
        impl_->ioc.get_executor());
    // Listen below the ephemeral range (32768+): once cut, an ephemeral port could be taken
    // by any outgoing connection on the machine, and the proxy could not listen there again.
    for (std::uint16_t port = static_cast<std::uint16_t>(21000 + ::getpid() % 8000);; ++port) {
        try {
            impl_->port = port;
            impl_->listen();
            break;
        } catch (const std::exception&) {
            impl_->acceptor.reset();
            if (port > 31000) throw;
        }
    }
    impl_->thread = std::thread([impl = impl_.get()] { impl->ioc.run(); });
}

TcpProxy::~TcpProxy() {
    // Never throws: the relayed connections close with the loop below all the same.
    try {
        on_proxy(impl_, [impl = impl_.get()] { impl->cut(); });
    } catch (...) {
    }
    impl_->work.reset();
    impl_->ioc.stop();
    impl_->thread.join();
}

std::uint16_t TcpProxy::port() const { return impl_->port; }

void TcpProxy::cut() {
    on_proxy(impl_, [impl = impl_.get()] { impl->cut(); });
}

void TcpProxy::restore() {
    // The port may stay busy for a moment after the cut: retry the bind briefly.
    for (int attempt = 0;; ++attempt) {
        std::string error;
        on_proxy(impl_, [impl = impl_.get(), &error] {
            try {
                impl->listen();
            } catch (const std::exception& e) {
                impl->acceptor.reset();
                error = e.what();
            }
        });
        if (error.empty()) return;
        if (attempt == 100) throw std::runtime_error("proxy cannot listen again: " + error);
        std::this_thread::sleep_for(std::chrono::milliseconds{100});
    }
}

}  // namespace outboxd::test
