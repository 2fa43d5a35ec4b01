#include "http_sink.hpp"

#include <thread>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

namespace outboxd::bench {
namespace {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;

class Connection : public std::enable_shared_from_this<Connection> {
public:
    Connection(tcp::socket socket, const HttpSink::Arrived& arrived)
        : stream_(std::move(socket)), arrived_(arrived) {}

    void read() {
        request_ = {};
        http::async_read(stream_, buffer_, request_,
                         [self = shared_from_this()](beast::error_code ec, std::size_t) {
                             if (!ec) self->answer();
                         });
    }

private:
    void answer() {
        arrived_(request_["Outboxd-Dispatch-Key"]);
        response_ = {http::status::ok, 11};
        response_.keep_alive(request_.keep_alive());
        response_.set(http::field::content_type, "application/json");
        response_.body() = R"({"ok":true})";
        response_.prepare_payload();
        http::async_write(stream_, response_,
                          [self = shared_from_this()](beast::error_code ec, std::size_t) {
                              if (!ec && self->response_.keep_alive()) self->read();
                          });
    }

    beast::tcp_stream stream_;
    const HttpSink::Arrived& arrived_;
    beast::flat_buffer buffer_;
    http::request<http::string_body> request_;
    http::response<http::string_body> response_;
};

}  // namespace

struct HttpSink::Impl {
    explicit Impl(Arrived on_arrival)
        : arrived(std::move(on_arrival)), acceptor(ioc, {net::ip::make_address("127.0.0.1"), 0}) {}

    void accept() {
        acceptor.async_accept([this](beast::error_code ec, tcp::socket socket) {
            if (ec) return;
            socket.set_option(tcp::no_delay(true), ec);
            std::make_shared<Connection>(std::move(socket), arrived)->read();
            accept();
        });
    }

    Arrived arrived;
    net::io_context ioc{1};
    tcp::acceptor acceptor;
    std::thread thread;
};

HttpSink::HttpSink(Arrived arrived) : impl_(std::make_unique<Impl>(std::move(arrived))) {
    impl_->accept();
    impl_->thread = std::thread{[impl = impl_.get()] { impl->ioc.run(); }};
}

HttpSink::~HttpSink() {
    impl_->ioc.stop();
    if (impl_->thread.joinable()) impl_->thread.join();
}

std::uint16_t HttpSink::port() const { return impl_->acceptor.local_endpoint().port(); }

}  // namespace outboxd::bench
