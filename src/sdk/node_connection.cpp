#include "node_connection.hpp"

#include <spdlog/spdlog.h>
#include <boost/asio/buffer.hpp>
#include <boost/beast/core/bind_handler.hpp>
#include <boost/beast/core/buffers_to_string.hpp>
#include <boost/beast/http/field.hpp>
#include <boost/beast/websocket.hpp>

namespace outboxd::sdk::detail {
namespace {

namespace beast = boost::beast;
namespace websocket = beast::websocket;
namespace net = boost::asio;
using boost::system::error_code;

constexpr std::string_view kUserAgent = "outboxd-worker-sdk";

}  // namespace

NodeConnection::NodeConnection(net::io_context& ioc, WsUrl url, Settings settings, Events events)
    : url_(std::move(url)),
      settings_(std::move(settings)),
      events_(std::move(events)),
      resolver_(ioc),
      ws_(ioc) {}

void NodeConnection::start() {
    beast::get_lowest_layer(ws_).expires_after(settings_.connect_timeout);
    resolver_.async_resolve(
        url_.host, url_.port,
        beast::bind_front_handler(&NodeConnection::on_resolve, shared_from_this()));
}

void NodeConnection::on_resolve(const error_code& ec,
                                const net::ip::tcp::resolver::results_type& results) {
    if (ec || close_requested_) return finish(ec ? ec : net::error::operation_aborted);
    // The deadline set in start() bounds the connect; time spent resolving counts against it.
    beast::get_lowest_layer(ws_).async_connect(
        results, beast::bind_front_handler(&NodeConnection::on_connect, shared_from_this()));
}

void NodeConnection::on_connect(const error_code& ec, const net::ip::tcp::endpoint&) {
    if (ec || close_requested_) return finish(ec ? ec : net::error::operation_aborted);

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
        beast::bind_front_handler(&NodeConnection::on_handshake, shared_from_this()));
}

void NodeConnection::on_handshake(const error_code& ec) {
    // close() during the upgrade cancelled it, unless it had completed already: either way
    // nobody wants this connection any more.
    if (ec || close_requested_) return finish(ec ? ec : net::error::operation_aborted);
    open_ = true;
    ws_.text(true);
    events_.opened();
    read_next();
    if (!write_queue_.empty()) schedule_write();
}

void NodeConnection::read_next() {
    ws_.async_read(read_buffer_,
                   beast::bind_front_handler(&NodeConnection::on_read, shared_from_this()));
}

void NodeConnection::on_read(const error_code& ec, std::size_t) {
    if (ec) return finish(ec);
    if (finished_) return;
    const auto frame = beast::buffers_to_string(read_buffer_.data());
    read_buffer_.consume(read_buffer_.size());
    events_.received(frame);
    // Keep reading while closing: the close handshake completes through the read.
    if (!finished_) read_next();
}

void NodeConnection::send(std::string frame) {
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

void NodeConnection::batch_writes(std::size_t max_bytes) { batch_max_bytes_ = max_bytes; }

// The write starts once the current handler is done: answers handed over meanwhile leave
// in the same write.
void NodeConnection::schedule_write() {
    if (writing_) return;
    writing_ = true;
    net::post(ws_.get_executor(), [self = shared_from_this()] { self->write_next(); });
}

void NodeConnection::write_next() {
    if (finished_ || write_queue_.empty()) {
        writing_ = false;
        if (close_requested_ && !finished_) close_now();
        return;
    }
    in_write_ = write_queue_.take(batch_max_bytes_ > 0, batch_max_bytes_);
    ws_.async_write(net::buffer(in_write_),
                    beast::bind_front_handler(&NodeConnection::on_write, shared_from_this()));
}

void NodeConnection::on_write(const error_code& ec, std::size_t) {
    if (ec) {
        writing_ = false;
        return finish(ec);
    }
    write_next();
}

void NodeConnection::close() {
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

void NodeConnection::close_now() {
    if (close_started_ || finished_) return;
    close_started_ = true;
    ws_.async_close(websocket::close_code::normal,
                    beast::bind_front_handler(&NodeConnection::on_close, shared_from_this()));
}

void NodeConnection::on_close(const error_code& ec) {
    finish(ec);
}

void NodeConnection::abort() {
    close_requested_ = true;
    resolver_.cancel();
    beast::get_lowest_layer(ws_).close();
}

void NodeConnection::finish(error_code ec) {
    if (finished_) return;
    if (overflowed_) ec = net::error::no_buffer_space;
    finished_ = true;
    open_ = false;
    write_queue_.clear();
    // Ends whatever else is pending (a read during close, a write) so this object goes away.
    beast::get_lowest_layer(ws_).close();
    events_.closed(ec);
}

}  // namespace outboxd::sdk::detail
