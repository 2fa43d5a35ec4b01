#include "outboxd/http/server.hpp"

#include <array>
#include <random>
#include <stdexcept>

#include <boost/asio/ssl.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <spdlog/spdlog.h>

#include "outboxd/util/untrusted_text.hpp"

#include "http_session.hpp"
#include "server_impl.hpp"

namespace outboxd::http {

namespace net = boost::asio;
using tcp = net::ip::tcp;

namespace {

// Accept errors (EMFILE above all) back off from 5 ms to 1 s: the pending connection stays in
// the kernel's backlog meanwhile, and the loop keeps serving the connections it has.
constexpr auto kAcceptRetryMin = std::chrono::milliseconds{5};
constexpr auto kAcceptRetryMax = std::chrono::milliseconds{1000};
// How long a refused connection is given to read its 503 before it is closed.
constexpr auto kRefusalLinger = std::chrono::seconds{2};
// Refused connections being answered at once; past this they are closed unanswered, so that
// a flood at the cap cannot take the descriptors the node keeps for its own connections.
constexpr std::size_t kMaxRefusalsInFlight = 64;

}  // namespace

namespace {

// TLS 1.2 and later only, without renegotiation, with the certificate chain and key the
// operator named. Each file is loaded here, at start, so that a bad one stops the node with
// a message naming it.
std::shared_ptr<net::ssl::context> make_tls_context(const TlsFiles& files) {
    auto context = std::make_shared<net::ssl::context>(net::ssl::context::tls_server);
    context->set_options(net::ssl::context::default_workarounds | net::ssl::context::no_sslv2 |
                         net::ssl::context::no_sslv3 | net::ssl::context::no_tlsv1 |
                         net::ssl::context::no_tlsv1_1 | net::ssl::context::single_dh_use);
    ::SSL_CTX_set_options(context->native_handle(), SSL_OP_NO_RENEGOTIATION);
    boost::system::error_code ec;
    context->use_certificate_chain_file(files.cert_file, ec);
    if (ec) {
        throw std::runtime_error(
            "OUTBOXD_TLS_CERT_FILE: cannot load a PEM certificate chain from '" + files.cert_file +
            "': " + ec.message());
    }
    context->use_private_key_file(files.key_file, net::ssl::context::pem, ec);
    if (ec) {
        throw std::runtime_error("OUTBOXD_TLS_KEY_FILE: cannot load a PEM private key from '" +
                                 files.key_file + "': " + ec.message());
    }
    if (::SSL_CTX_check_private_key(context->native_handle()) != 1) {
        throw std::runtime_error("OUTBOXD_TLS_KEY_FILE: the key in '" + files.key_file +
                                 "' does not match the certificate in '" + files.cert_file + "'");
    }
    return context;
}

}  // namespace

ConnectionSlot::ConnectionSlot(std::shared_ptr<std::size_t> open, prometheus::Gauge& gauge)
    : open_(std::move(open)), gauge_(gauge) {
    ++*open_;
    gauge_.Increment();
}

ConnectionSlot::~ConnectionSlot() {
    --*open_;
    gauge_.Decrement();
}

HttpServer::Impl::Impl(net::io_context& ioc_, ServerSettings settings_, NodeServices services_)
    : ioc(ioc_),
      settings(std::move(settings_)),
      services(std::move(services_)),
      router(ioc_.get_executor(), services, settings),
      acceptor(ioc_),
      accept_backoff(kAcceptRetryMin, kAcceptRetryMax, std::random_device{}()),
      accept_timer(ioc_) {
    if (settings.tls) tls = make_tls_context(*settings.tls);
}

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
        if (ec) return accept_failed(ec);
        accept_backoff.reset();
        const auto now = std::chrono::steady_clock::now();
        const auto lasted = accept_failures.lasted(now);
        if (const auto failed = accept_failures.succeeded(); failed > 0) {
            spdlog::info("event=accept_recovered failures={} after_ms={}", failed, lasted.count());
        }
        if (*open_connections >= settings.max_connections) {
            refuse(std::move(socket));
        } else {
            // Frames are small and latency-bound: never hold one back waiting for an ACK.
            boost::system::error_code ignored;
            socket.set_option(tcp::no_delay(true), ignored);
            if (tls) {
                std::make_shared<HttpSession<TlsStream>>(std::move(socket), *this)->run();
            } else {
                std::make_shared<HttpSession<PlainStream>>(std::move(socket), *this)->run();
            }
        }
        accept();
    });
}

void HttpServer::Impl::accept_failed(const boost::system::error_code& ec) {
    services.metrics.accept_errors_total.Increment();
    const auto delay = accept_backoff.next();
    const auto now = std::chrono::steady_clock::now();
    if (accept_failures.failed(now)) {
        spdlog::warn("event=accept_failed failures={} for_ms={} retry_in_ms={} error=\"{}\"",
                     accept_failures.failures(), accept_failures.lasted(now).count(), delay.count(),
                     ec.message());
    }
    accept_timer.expires_after(delay);
    accept_timer.async_wait([this](boost::system::error_code wait_ec) {
        if (!wait_ec && accepting) accept();
    });
}

namespace {

// A connection refused at the cap: the 503 goes out first, then the connection is closed
// once the client is done with it (closing with its request unread would reset it before
// it reads the answer).
struct Refusal : std::enable_shared_from_this<Refusal> {
    Refusal(tcp::socket socket, std::string answer, std::shared_ptr<std::size_t> in_flight)
        : stream(std::move(socket)), answer(std::move(answer)), in_flight(std::move(in_flight)) {
        ++*this->in_flight;
    }
    ~Refusal() { --*in_flight; }
    void run() {
        stream.expires_after(kRefusalLinger);
        net::async_write(stream, net::buffer(answer),
                         [self = shared_from_this()](auto ec, std::size_t) {
                             if (ec) return;
                             boost::system::error_code ignored;
                             self->stream.socket().shutdown(tcp::socket::shutdown_send, ignored);
                             self->drain();
                         });
    }
    void drain() {
        stream.async_read_some(net::buffer(sink),
                               [self = shared_from_this()](auto ec, std::size_t) {
                                   if (!ec) self->drain();
                               });
    }
    boost::beast::tcp_stream stream;
    std::string answer;
    std::shared_ptr<std::size_t> in_flight;
    std::array<char, 1024> sink{};
};

}  // namespace

void HttpServer::Impl::refuse(tcp::socket socket) {
    services.metrics.connections_refused_total.Increment();
    // A TLS client expects a handshake, not plain text: it just sees the connection close.
    if (tls || *refusals_in_flight >= kMaxRefusalsInFlight) {
        boost::system::error_code ignored;
        socket.close(ignored);
        return;
    }
    const auto body =
        error_response(503, "too_many_connections",
                       "this node serves at most " + std::to_string(settings.max_connections) +
                           " connections at once; try again later")
            .body;
    std::make_shared<Refusal>(std::move(socket),
                              "HTTP/1.1 503 Service Unavailable\r\nServer: outboxd\r\n"
                              "Content-Type: application/json\r\nRetry-After: 1\r\n"
                              "Connection: close\r\nContent-Length: " +
                                  std::to_string(body.size()) + "\r\n\r\n" + body,
                              refusals_in_flight)
        ->run();
}

void HttpServer::Impl::fault(std::string_view where, std::string_view what) {
    services.metrics.fault(std::string{where}).Increment();
    spdlog::error("event=fault where={} error=\"{}\"", where, util::log_safe(what));
}

HttpServer::HttpServer(net::io_context& ioc, ServerSettings settings, NodeServices services)
    : impl_(std::make_unique<Impl>(ioc, std::move(settings), std::move(services))) {}

HttpServer::~HttpServer() = default;

void HttpServer::start() { impl_->start(); }

std::uint16_t HttpServer::port() const {
    boost::system::error_code ec;
    const auto endpoint = impl_->acceptor.local_endpoint(ec);
    return ec ? 0 : endpoint.port();
}

void HttpServer::stop_accepting() {
    impl_->accepting = false;
    impl_->accept_timer.cancel();
    boost::system::error_code ec;
    impl_->acceptor.close(ec);
}

}  // namespace outboxd::http
