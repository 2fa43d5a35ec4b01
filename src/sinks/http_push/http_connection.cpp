#include "http_connection.hpp"

#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <openssl/err.h>
#include <openssl/ssl.h>

namespace outboxd::sinks::http_push::detail {
namespace {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;
using beast::error_code;
using Clock = std::chrono::steady_clock;

// Stream is a beast::tcp_stream (http://) or an ssl_stream over one (https://).
template <typename Stream>
class Connection final : public HttpConnection,
                         public std::enable_shared_from_this<Connection<Stream>> {
    static constexpr bool kTls = !std::is_same_v<Stream, beast::tcp_stream>;

public:
    Connection(const net::any_io_executor& ex, TargetUrl url, net::ssl::context* tls,
               const HostPolicy& policy, ConnectionLimits limits)
        : url_(std::move(url)),
          policy_(policy),
          limits_(limits),
          resolver_(ex),
          resolve_timer_(ex),
          stream_(make_stream(ex, tls)) {}

    void exchange(std::shared_ptr<const Request> request, std::chrono::milliseconds timeout,
                  Done done) override {
        request_ = std::move(request);
        done_ = std::move(done);
        timeout_ = timeout;
        deadline_ = Clock::now() + timeout;
        if (connected_) {
            reused_ = true;
            write();
        } else {
            reused_ = false;
            resolve();
        }
    }

    void close() override {
        closed_ = true;
        resolver_.cancel();
        resolve_timer_.cancel();
        error_code ignored;
        beast::get_lowest_layer(stream_).socket().close(ignored);
        connected_ = false;
    }

private:
    static Stream make_stream(const net::any_io_executor& ex, net::ssl::context* tls) {
        if constexpr (kTls) {
            return Stream{ex, *tls};
        } else {
            (void)tls;
            return Stream{ex};
        }
    }

    void resolve() {
        // The resolver has no deadline of its own: a timer cancels it.
        resolve_timer_.expires_at(deadline_);
        resolve_timer_.async_wait([weak = this->weak_from_this()](const error_code& ec) {
            if (ec) return;
            if (const auto self = weak.lock()) {
                self->resolve_timed_out_ = true;
                self->resolver_.cancel();
            }
        });
        const auto flags =
            url_.host_is_address ? tcp::resolver::numeric_host : tcp::resolver::flags{};
        resolver_.async_resolve(
            url_.host, std::to_string(url_.port), flags,
            beast::bind_front_handler(&Connection::on_resolve, this->shared_from_this()));
    }

    void on_resolve(const error_code& ec, const tcp::resolver::results_type& results) {
        resolve_timer_.cancel();
        if (resolve_timed_out_) return fail(timed_out_after(timeout_.count()), false);
        if (ec) return fail("cannot resolve " + url_.host + ": " + ec.message(), false);
        // Every address is checked, so that a name cannot lead to where its URL may not.
        std::vector<tcp::endpoint> allowed;
        std::string refused;
        for (const auto& entry : results) {
            const auto address = entry.endpoint().address().to_string();
            if (auto why = policy_.address_problem(url_, address)) {
                if (refused.empty()) refused = std::move(*why);  // the resolver's first choice
                continue;
            }
            allowed.push_back(entry.endpoint());
        }
        if (allowed.empty()) {
            return fail(refused.empty() ? "no address for " + url_.host : "refused: " + refused,
                        false);
        }
        arm();
        beast::get_lowest_layer(stream_).async_connect(
            allowed, beast::bind_front_handler(&Connection::on_connect, this->shared_from_this()));
    }

    void on_connect(const error_code& ec, const tcp::endpoint&) {
        if (ec) return fail_with(ec, "cannot connect to " + url_.host_header, false);
        error_code ignored;
        beast::get_lowest_layer(stream_).socket().set_option(tcp::no_delay(true), ignored);
        if constexpr (kTls) {
            // Server Name Indication and the name the certificate must carry; an address is
            // checked against the certificate's addresses and sent as no name.
            if (!url_.host_is_address &&
                !::SSL_set_tlsext_host_name(stream_.native_handle(), url_.host.c_str())) {
                return fail("TLS: cannot set the server name", false);
            }
            stream_.set_verify_mode(net::ssl::verify_peer);
            stream_.set_verify_callback(net::ssl::host_name_verification(url_.host));
            arm();
            stream_.async_handshake(
                net::ssl::stream_base::client,
                beast::bind_front_handler(&Connection::on_handshake, this->shared_from_this()));
        } else {
            connected_ = true;
            write();
        }
    }

    void on_handshake(const error_code& ec) {
        if (ec) return fail_with(ec, "TLS handshake with " + url_.host_header, false);
        connected_ = true;
        write();
    }

    void write() {
        arm();
        http::async_write(
            stream_, *request_,
            beast::bind_front_handler(&Connection::on_write, this->shared_from_this()));
    }

    void on_write(const error_code& ec, std::size_t) {
        if (ec) return fail_with(ec, "sending to " + url_.host_header, reused_);
        parser_.emplace();
        parser_->header_limit(static_cast<std::uint32_t>(limits_.max_header_bytes));
        parser_->body_limit(limits_.max_response_bytes);
        arm();
        http::async_read(stream_, buffer_, *parser_,
                         beast::bind_front_handler(&Connection::on_read, this->shared_from_this()));
    }

    void on_read(const error_code& ec, std::size_t) {
        if (ec == http::error::body_limit && parser_->is_header_done()) {
            // The status is known; the rest of a body past the limit is not read.
            Exchange exchange;
            exchange.status = static_cast<int>(parser_->get().result_int());
            exchange.body = "(response body over " + std::to_string(limits_.max_response_bytes) +
                            " bytes, not read)";
            return finish(std::move(exchange), false, false);
        }
        if (ec) {
            const bool nothing_read = !parser_->got_some();
            const bool closed_by_peer = ec == http::error::end_of_stream ||
                                        ec == net::error::connection_reset || ec == net::error::eof;
            return fail_with(ec, "reading the answer of " + url_.host_header,
                             reused_ && nothing_read && closed_by_peer);
        }
        auto& response = parser_->get();
        Exchange exchange;
        exchange.status = static_cast<int>(response.result_int());
        exchange.body = std::move(response.body());
        if (const auto it = response.find(http::field::retry_after); it != response.end()) {
            exchange.retry_after = std::string{it->value()};
        }
        finish(std::move(exchange), response.keep_alive() && !closed_, false);
    }

    void arm() { beast::get_lowest_layer(stream_).expires_at(deadline_); }

    void fail_with(const error_code& ec, const std::string& what, bool stale) {
        if (ec == beast::error::timeout) return fail(timed_out_after(timeout_.count()), stale);
        if (closed_) return fail("the target was closed", false);
        fail(what + ": " + ec.message(), stale);
    }

    void fail(std::string why, bool stale) {
        Exchange exchange;
        exchange.failure = std::move(why);
        finish(std::move(exchange), false, stale);
    }

    void finish(Exchange exchange, bool reusable, bool stale) {
        beast::get_lowest_layer(stream_).expires_never();
        if (!reusable) {
            error_code ignored;
            beast::get_lowest_layer(stream_).socket().close(ignored);
            connected_ = false;
        }
        request_.reset();
        parser_.reset();
        auto done = std::move(done_);
        done_ = nullptr;
        if (done) done(std::move(exchange), reusable, stale);
    }

    TargetUrl url_;
    const HostPolicy& policy_;
    ConnectionLimits limits_;
    tcp::resolver resolver_;
    net::steady_timer resolve_timer_;
    Stream stream_;
    beast::flat_buffer buffer_;
    std::optional<http::response_parser<http::string_body>> parser_;
    std::shared_ptr<const Request> request_;
    Done done_;
    std::chrono::milliseconds timeout_{0};
    Clock::time_point deadline_;
    bool connected_ = false;
    bool reused_ = false;
    bool closed_ = false;
    bool resolve_timed_out_ = false;
};

}  // namespace

std::shared_ptr<HttpConnection> make_connection(const net::any_io_executor& ex,
                                                const TargetUrl& url, net::ssl::context* tls,
                                                const HostPolicy& policy, ConnectionLimits limits) {
    if (url.tls) {
        return std::make_shared<Connection<beast::ssl_stream<beast::tcp_stream>>>(ex, url, tls,
                                                                                  policy, limits);
    }
    return std::make_shared<Connection<beast::tcp_stream>>(ex, url, nullptr, policy, limits);
}

}  // namespace outboxd::sinks::http_push::detail
