#include "net_client.hpp"

#include <array>
#include <functional>
#include <random>
#include <regex>
#include <stdexcept>

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket.hpp>

namespace outboxd::test {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace bhttp = beast::http;
namespace websocket = beast::websocket;
using tcp = net::ip::tcp;

HttpResult http_call(std::uint16_t port, const std::string& method, const std::string& target,
                     const std::string& body, const std::optional<std::string>& bearer) {
    net::io_context ioc;
    beast::tcp_stream stream{ioc};
    stream.expires_after(std::chrono::seconds{30});
    stream.connect(tcp::endpoint{net::ip::make_address("127.0.0.1"), port});
    bhttp::request<bhttp::string_body> request{bhttp::string_to_verb(method), target, 11};
    request.set(bhttp::field::host, "127.0.0.1");
    if (bearer) request.set(bhttp::field::authorization, "Bearer " + *bearer);
    if (!body.empty()) request.set(bhttp::field::content_type, "application/json");
    request.body() = body;
    request.prepare_payload();
    bhttp::write(stream, request);
    beast::flat_buffer buffer;
    bhttp::response<bhttp::string_body> response;
    bhttp::read(stream, buffer, response);
    beast::error_code ignored;
    stream.socket().shutdown(tcp::socket::shutdown_both, ignored);
    return {static_cast<int>(response.result_int()), response.body()};
}

std::string raw_http(std::uint16_t port, const std::string& bytes) {
    net::io_context ioc;
    beast::tcp_stream stream{ioc};
    stream.expires_after(std::chrono::seconds{5});
    stream.connect(tcp::endpoint{net::ip::make_address("127.0.0.1"), port});
    net::write(stream.socket(), net::buffer(bytes));
    // Asynchronous reads, so that the stream's timer bounds the wait for a server that
    // keeps the connection open.
    std::string answer;
    std::array<char, 4096> chunk{};
    std::function<void(beast::error_code, std::size_t)> on_read = [&](beast::error_code ec,
                                                                      std::size_t n) {
        answer.append(chunk.data(), n);
        if (!ec) stream.async_read_some(net::buffer(chunk), on_read);
    };
    stream.expires_after(std::chrono::seconds{5});
    stream.async_read_some(net::buffer(chunk), on_read);
    ioc.run();
    return answer;
}

struct WsClient::Impl {
    net::io_context ioc;
    websocket::stream<beast::tcp_stream> ws{ioc};
    beast::flat_buffer buffer;
    bool closed = false;
};

WsClient::WsClient(std::uint16_t port, const std::string& target,
                   const std::optional<std::string>& bearer, std::size_t max_frame)
    : impl_(std::make_unique<Impl>()) {
    auto& lowest = beast::get_lowest_layer(impl_->ws);
    lowest.expires_after(std::chrono::seconds{10});
    lowest.connect(tcp::endpoint{net::ip::make_address("127.0.0.1"), port});
    impl_->ws.set_option(websocket::stream_base::decorator([bearer](websocket::request_type& req) {
        if (bearer) req.set(bhttp::field::authorization, "Bearer " + *bearer);
    }));
    impl_->ws.read_message_max(max_frame);
    websocket::response_type response;
    beast::error_code ec;
    impl_->ws.handshake(response, "127.0.0.1", target, ec);
    if (ec) {
        throw std::runtime_error("websocket upgrade refused: HTTP " +
                                 std::to_string(response.result_int()) + " " + response.body());
    }
    lowest.expires_never();
}

WsClient::~WsClient() {
    if (!impl_->closed) {
        beast::error_code ignored;
        beast::get_lowest_layer(impl_->ws).socket().close(ignored);
    }
}

void WsClient::send(const std::string& text) {
    impl_->ws.text(true);
    impl_->ws.write(net::buffer(text));
}

void WsClient::send_binary(const std::string& bytes) {
    impl_->ws.binary(true);
    impl_->ws.write(net::buffer(bytes));
}

std::optional<std::string> WsClient::read(std::chrono::milliseconds timeout) {
    if (impl_->closed) return std::nullopt;
    // Synchronous Beast reads ignore the stream's timer: read asynchronously and bound the
    // wait by running the context for at most `timeout`.
    impl_->buffer.consume(impl_->buffer.size());
    std::optional<beast::error_code> result;
    impl_->ws.async_read(impl_->buffer,
                         [&result](beast::error_code ec, std::size_t) { result = ec; });
    impl_->ioc.restart();
    impl_->ioc.run_for(timeout);
    if (!result) {
        // Timed out: abandon this connection's pending read (the test treats it as silence).
        beast::get_lowest_layer(impl_->ws).cancel();
        impl_->ioc.restart();
        impl_->ioc.run();
        impl_->closed = true;
        return std::nullopt;
    }
    if (*result) {
        impl_->closed = true;
        return std::nullopt;
    }
    return beast::buffers_to_string(impl_->buffer.data());
}

int WsClient::await_close(std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (!impl_->closed && std::chrono::steady_clock::now() < deadline) {
        (void)read(std::chrono::duration_cast<std::chrono::milliseconds>(
            deadline - std::chrono::steady_clock::now()));
    }
    if (!impl_->closed) return 0;
    return static_cast<int>(impl_->ws.reason().code);
}

bool WsClient::open() const { return !impl_->closed && impl_->ws.is_open(); }

std::optional<std::uint16_t> listening_port(const std::string& log) {
    static const std::regex pattern{R"(event=listening .* address=[^ ]*:(\d+))"};
    std::smatch match;
    if (!std::regex_search(log, match, pattern)) return std::nullopt;
    return static_cast<std::uint16_t>(std::stoi(match[1]));
}

std::uint16_t free_port() {
    namespace net = boost::asio;
    static std::mt19937 random{std::random_device{}()};
    net::io_context ioc;
    const auto start = std::uniform_int_distribution<int>{20000, 32767}(random);
    for (int i = 0; i < 12768; ++i) {
        const auto port = static_cast<std::uint16_t>(20000 + (start - 20000 + i) % 12768);
        net::ip::tcp::acceptor acceptor{ioc};
        boost::system::error_code ec;
        acceptor.open(net::ip::tcp::v4(), ec);
        if (!ec) acceptor.bind({net::ip::make_address("127.0.0.1"), port}, ec);
        if (!ec) return port;
    }
    throw std::runtime_error("no free port between 20000 and 32767");
}

}  // namespace outboxd::test
