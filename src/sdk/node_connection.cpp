#include "node_connection.hpp"

#include <type_traits>

#include <boost/asio/buffer.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core/bind_handler.hpp>
#include <boost/beast/core/buffers_to_string.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/field.hpp>
#include <boost/beast/ssl.hpp>
#include <boost/beast/websocket.hpp>
#include <boost/beast/websocket/ssl.hpp>
#include <boost/beast/websocket/stream.hpp>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <spdlog/spdlog.h>

#include "outboxd/worker/frame_queue.hpp"

namespace outboxd::sdk::detail {
namespace {

namespace beast = boost::beast;
namespace websocket = beast::websocket;
namespace net = boost::asio;
using boost::system::error_code;

constexpr std::string_view kUserAgent = "outboxd-worker-sdk";

// The connection over one transport: Stream is a tcp_stream (ws://) or an ssl_stream over
// one (wss://).
template <typename Stream>
class WsConnection final : public NodeConnection,
                           public std::enable_shared_from_this<WsConnection<Stream>> {
public:
    static constexpr bool kTls = !std::is_same_v<Stream, beast::tcp_stream>;

    WsConnection(net::io_context& ioc, WsUrl url, Settings settings, Events events,
                 net::ssl::context* tls);

    void start() override;
    void send(std::string frame) override;
    void batch_writes(std::size_t max_bytes) override;
    void close() override;
    void abort() override;
    [[nodiscard]] bool is_open() const noexcept override { return open_ && !close_requested_; }

private:
    void on_resolve(const error_code& ec, const net::ip::tcp::resolver::results_type& results);
    void on_connect(const error_code& ec, const net::ip::tcp::endpoint& endpoint);
    void on_tls_handshake(const error_code& ec);
    void upgrade();
    void on_handshake(const error_code& ec);
    void read_next();
    void on_read(const error_code& ec, std::size_t bytes);
    void schedule_write();
    void write_next();
    void on_write(const error_code& ec, std::size_t bytes);
    void close_now();
    void on_close(const error_code& ec);
    void finish(error_code ec);

    WsUrl url_;
    Settings settings_;
    Events events_;
    net::ip::tcp::resolver resolver_;
    websocket::stream<Stream> ws_;
    beast::flat_buffer read_buffer_;
    worker::protocol::FrameQueue write_queue_;
    std::string in_write_;             // the text of the write in flight
    std::size_t batch_max_bytes_ = 0;  // 0: one frame per write
    bool open_ = false;
    bool writing_ = false;  // a write is in flight or scheduled
    bool close_requested_ = false;
    bool close_started_ = false;
    bool finished_ = false;
    bool overflowed_ = false;  // cut for an unread write queue: reported as no_buffer_space
};

template <typename Stream>
websocket::stream<Stream> make_ws(net::io_context& ioc, net::ssl::context* tls) {
    if constexpr (std::is_same_v<Stream, beast::tcp_stream>) {
        return websocket::stream<Stream>{ioc};
    } else {
        return websocket::stream<Stream>{ioc, *tls};
    }
}

template <typename Stream>
WsConnection<Stream>::WsConnection(net::io_context& ioc, WsUrl url, Settings settings,
                                   Events events, net::ssl::context* tls)
    : url_(std::move(url)),
      settings_(std::move(settings)),
      events_(std::move(events)),
      resolver_(ioc),
      ws_(make_ws<Stream>(ioc, tls)) {}

template <typename Stream>
void WsConnection<Stream>::start() {
    beast::get_lowest_layer(ws_).expires_after(settings_.connect_timeout);
    resolver_.async_resolve(
        url_.host, url_.port,
        beast::bind_front_handler(&WsConnection::on_resolve, this->shared_from_this()));
}

template <typename Stream>
void WsConnection<Stream>::on_resolve(const error_code& ec,
                                      const net::ip::tcp::resolver::results_type& results) {
    if (ec || close_requested_) return finish(ec ? ec : net::error::operation_aborted);
    // The deadline set in start() bounds the connect; time spent resolving counts against it.
    beast::get_lowest_layer(ws_).async_connect(
        results, beast::bind_front_handler(&WsConnection::on_connect, this->shared_from_this()));
}

template <typename Stream>
void WsConnection<Stream>::on_connect(const error_code& ec, const net::ip::tcp::endpoint&) {
    if (ec || close_requested_) return finish(ec ? ec : net::error::operation_aborted);
    if constexpr (kTls) {
        auto& tls = ws_.next_layer();
        // Server Name Indication and the name the certificate must carry; an IP literal
        // is checked against the certificate's IP addresses instead, and sent as no name.
        error_code address_ec;
        (void)net::ip::make_address(url_.host, address_ec);
        if (address_ec && !::SSL_set_tlsext_host_name(tls.native_handle(), url_.host.c_str())) {
            return finish(
                error_code{static_cast<int>(::ERR_get_error()), net::error::get_ssl_category()});
        }
        tls.set_verify_mode(net::ssl::verify_peer);
        tls.set_verify_callback(net::ssl::host_name_verification(url_.host));
        // Still under the connect deadline set in start().
        tls.async_handshake(
            net::ssl::stream_base::client,
            beast::bind_front_handler(&WsConnection::on_tls_handshake, this->shared_from_this()));
    } else {
        upgrade();
    }
}

template <typename Stream>
void WsConnection<Stream>::on_tls_handshake(const error_code& ec) {
    if (ec || close_requested_) return finish(ec ? ec : net::error::operation_aborted);
    upgrade();
}

template <typename Stream>
void WsConnection<Stream>::upgrade() {
    // The websocket stream runs its own timers from here on; the tcp_stream's must be off.
    beast::get_lowest_layer(ws_).expires_never();
    // Answers are small frames: send each at once instead of waiting for the last one's ACK.
    error_code ignored;
    beast::get_lowest_layer(ws_).socket().set_option(net::ip::tcp::no_delay(true), ignored);
    auto timeouts = websocket::stream_base::timeout::suggested(beast::role_type::client);
    if (settings_.idle_timeout.count() > 0) {
        // Suggested client settings never time out an idle connection; pings make silence
        // from a dead node visible.
        timeouts.idle_timeout = settings_.idle_timeout;
        timeouts.keep_alive_pings = true;
    }
    ws_.set_option(timeouts);
    ws_.set_option(websocket::stream_base::decorator(
        [token = settings_.token](websocket::request_type& request) {
            request.set(beast::http::field::user_agent, kUserAgent);
            if (token) request.set(beast::http::field::authorization, "Bearer " + *token);
        }));
    ws_.read_message_max(settings_.max_frame_bytes);
    ws_.async_handshake(
        url_.authority, url_.target,
        beast::bind_front_handler(&WsConnection::on_handshake, this->shared_from_this()));
}

template <typename Stream>
void WsConnection<Stream>::on_handshake(const error_code& ec) {
    // close() during the upgrade cancelled it, unless it had completed already: either way
    // nobody wants this connection any more.
    if (ec || close_requested_) return finish(ec ? ec : net::error::operation_aborted);
    open_ = true;
    ws_.text(true);
    events_.opened();
    read_next();
    if (!write_queue_.empty()) schedule_write();
}

template <typename Stream>
void WsConnection<Stream>::read_next() {
    ws_.async_read(read_buffer_,
                   beast::bind_front_handler(&WsConnection::on_read, this->shared_from_this()));
}

template <typename Stream>
void WsConnection<Stream>::on_read(const error_code& ec, std::size_t) {
    if (ec) return finish(ec);
    if (finished_) return;
    const auto frame = beast::buffers_to_string(read_buffer_.data());
    read_buffer_.consume(read_buffer_.size());
    events_.received(frame);
    // Keep reading while closing: the close handshake completes through the read.
    if (!finished_) read_next();
}

template <typename Stream>
void WsConnection<Stream>::send(std::string frame) {
    if (close_requested_ || finished_) return;
    if (write_queue_.size() >= settings_.max_write_queue) {
        // The node has stopped reading; waiting longer only grows the queue.
        spdlog::warn("worker client: {} frames unwritten to {}; cutting the connection",
                     write_queue_.size(), url_.authority);
        overflowed_ = true;
        abort();
        return;
    }
    write_queue_.push(std::move(frame));
    if (open_) schedule_write();
}

template <typename Stream>
void WsConnection<Stream>::batch_writes(std::size_t max_bytes) {
    batch_max_bytes_ = max_bytes;
}

// The write starts once the current handler is done: answers handed over meanwhile leave
// in the same write.
template <typename Stream>
void WsConnection<Stream>::schedule_write() {
    if (writing_) return;
    writing_ = true;
    net::post(ws_.get_executor(), [self = this->shared_from_this()] { self->write_next(); });
}

template <typename Stream>
void WsConnection<Stream>::write_next() {
    if (finished_ || write_queue_.empty()) {
        writing_ = false;
        if (close_requested_ && !finished_) close_now();
        return;
    }
    in_write_ = write_queue_.take(batch_max_bytes_ > 0, batch_max_bytes_);
    ws_.async_write(net::buffer(in_write_),
                    beast::bind_front_handler(&WsConnection::on_write, this->shared_from_this()));
}

template <typename Stream>
void WsConnection<Stream>::on_write(const error_code& ec, std::size_t) {
    if (ec) {
        writing_ = false;
        return finish(ec);
    }
    write_next();
}

template <typename Stream>
void WsConnection<Stream>::close() {
    if (close_requested_ || finished_) return;
    close_requested_ = true;
    if (!open_) {
        // Still resolving, connecting or upgrading: nothing to say goodbye to.
        resolver_.cancel();
        beast::get_lowest_layer(ws_).cancel();
        return;
    }
    if (!writing_) close_now();
}

template <typename Stream>
void WsConnection<Stream>::close_now() {
    if (close_started_ || finished_) return;
    close_started_ = true;
    ws_.async_close(websocket::close_code::normal,
                    beast::bind_front_handler(&WsConnection::on_close, this->shared_from_this()));
}

template <typename Stream>
void WsConnection<Stream>::on_close(const error_code& ec) {
    finish(ec);
}

template <typename Stream>
void WsConnection<Stream>::abort() {
    close_requested_ = true;
    resolver_.cancel();
    beast::get_lowest_layer(ws_).close();
}

template <typename Stream>
void WsConnection<Stream>::finish(error_code ec) {
    if (finished_) return;
    if (overflowed_) ec = net::error::no_buffer_space;
    finished_ = true;
    open_ = false;
    write_queue_.clear();
    // Ends whatever else is pending (a read during close, a write) so this object goes away.
    beast::get_lowest_layer(ws_).close();
    events_.closed(ec);
}

}  // namespace

std::shared_ptr<NodeConnection> make_node_connection(net::io_context& ioc, WsUrl url,
                                                     NodeConnection::Settings settings,
                                                     NodeConnection::Events events,
                                                     net::ssl::context* tls) {
    if (!url.tls) {
        return std::make_shared<WsConnection<beast::tcp_stream>>(
            ioc, std::move(url), std::move(settings), std::move(events), nullptr);
    }
    if (!tls) {
        // Reported like any failed connection: through `closed`, from the network thread.
        auto closed = std::move(events.closed);
        struct Refused final : NodeConnection {
            Refused(net::io_context& ioc, std::function<void(const error_code&)> closed)
                : ioc_(ioc), closed_(std::move(closed)) {}
            void start() override {
                net::post(ioc_, [closed = closed_] {
                    closed(make_error_code(net::error::no_protocol_option));
                });
            }
            void send(std::string) override {}
            void batch_writes(std::size_t) override {}
            void close() override {}
            void abort() override {}
            [[nodiscard]] bool is_open() const noexcept override { return false; }
            net::io_context& ioc_;
            std::function<void(const error_code&)> closed_;
        };
        return std::make_shared<Refused>(ioc, std::move(closed));
    }
    using TlsStream = beast::ssl_stream<beast::tcp_stream>;
    return std::make_shared<WsConnection<TlsStream>>(ioc, std::move(url), std::move(settings),
                                                     std::move(events), tls);
}

}  // namespace outboxd::sdk::detail
