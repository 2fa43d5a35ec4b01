#pragma once

// One WebSocket connection to one node, for one life: resolve, connect, upgrade, then read
// frames until either side closes. Reconnecting is the owner's business (a new object).
//
// Network thread only: every method must be called on the thread running the io_context,
// and every event is delivered there, never from inside a method call. The object keeps
// itself alive while operations are pending.

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/websocket/stream.hpp>

#include "outboxd/worker/frame_queue.hpp"
#include "ws_url.hpp"

namespace outboxd::sdk::detail {

class NodeConnection : public std::enable_shared_from_this<NodeConnection> {
public:
    struct Settings {
        std::optional<std::string> token;  // Authorization: Bearer, on the upgrade request
        std::size_t max_frame_bytes = 1 << 20;
        std::chrono::milliseconds connect_timeout{5000};
        std::chrono::milliseconds idle_timeout{30000};  // 0: no idle timeout
        // Frames waiting to be written past which the node counts as not reading: the
        // connection is cut (its tasks are re-armed by the node).
        std::size_t max_write_queue = 1024;
    };

    struct Events {
        std::function<void()> opened;  // upgrade done
        std::function<void(std::string_view frame)> received;
        // Exactly once, last. no_buffer_space: cut because the write queue overflowed.
        std::function<void(const boost::system::error_code&)> closed;
    };

    NodeConnection(boost::asio::io_context& ioc, WsUrl url, Settings settings, Events events);

    void start();
    // Queues a text frame; written in order, one write outstanding at a time. Ignored once
    // closing.
    void send(std::string frame);
    // From now on, frames queued together leave as batch frames of at most max_bytes (the
    // node said it reads them).
    void batch_writes(std::size_t max_bytes);
    // Writes what is queued, then performs the WebSocket close handshake. Before the upgrade
    // is done this aborts instead.
    void close();
    // Cuts the TCP connection now; pending operations end with operation_aborted.
    void abort();

    [[nodiscard]] bool is_open() const noexcept { return open_ && !close_requested_; }

private:
    void on_resolve(const boost::system::error_code& ec,
                    const boost::asio::ip::tcp::resolver::results_type& results);
    void on_connect(const boost::system::error_code& ec,
                    const boost::asio::ip::tcp::endpoint& endpoint);
    void on_handshake(const boost::system::error_code& ec);
    void read_next();
    void on_read(const boost::system::error_code& ec, std::size_t bytes);
    void schedule_write();
    void write_next();
    void on_write(const boost::system::error_code& ec, std::size_t bytes);
    void close_now();
    void on_close(const boost::system::error_code& ec);
    void finish(boost::system::error_code ec);

    WsUrl url_;
    Settings settings_;
    Events events_;
    boost::asio::ip::tcp::resolver resolver_;
    boost::beast::websocket::stream<boost::beast::tcp_stream> ws_;
    boost::beast::flat_buffer read_buffer_;
    worker::protocol::FrameQueue write_queue_;
    std::string in_write_;           // the text of the write in flight
    std::size_t batch_max_bytes_ = 0;  // 0: one frame per write
    bool open_ = false;
    bool writing_ = false;           // a write is in flight or scheduled
    bool close_requested_ = false;
    bool close_started_ = false;
    bool finished_ = false;
    bool overflowed_ = false;  // cut for an unread write queue: reported as no_buffer_space
};

}  // namespace outboxd::sdk::detail
