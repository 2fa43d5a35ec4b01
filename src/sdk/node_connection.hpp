#pragma once

// One WebSocket connection to one node, for one life: resolve, connect, for wss:// a TLS
// handshake, upgrade, then read frames until either side closes. Reconnecting is the
// owner's business (a new object).
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
#include <boost/system/error_code.hpp>

#include "ws_url.hpp"

namespace boost::asio::ssl {
class context;
}  // namespace boost::asio::ssl

namespace outboxd::sdk::detail {

class NodeConnection {
public:
    struct Settings {
        std::optional<std::string> token;  // Authorization: Bearer, on the upgrade request
        std::size_t max_frame_bytes = 1 << 20;
        std::chrono::milliseconds connect_timeout{5000};  // TCP connect and TLS handshake
        std::chrono::milliseconds idle_timeout{30000};    // 0: no idle timeout
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

    virtual ~NodeConnection() = default;

    virtual void start() = 0;
    // Queues a text frame; written in order, one write outstanding at a time. Ignored once
    // closing.
    virtual void send(std::string frame) = 0;
    // From now on, frames queued together leave as batch frames of at most max_bytes (the
    // node said it reads them).
    virtual void batch_writes(std::size_t max_bytes) = 0;
    // Writes what is queued, then performs the WebSocket close handshake. Before the upgrade
    // is done this aborts instead.
    virtual void close() = 0;
    // Cuts the TCP connection now; pending operations end with operation_aborted.
    virtual void abort() = 0;

    [[nodiscard]] virtual bool is_open() const noexcept = 0;
};

// A connection to `url`: ws:// over plain TCP, or wss:// over TLS verified with `tls` (the
// node's certificate must chain to a trusted CA and name the URL's host). `tls` must outlive
// the connection; a wss:// URL without it is refused at start (closed with an error).
[[nodiscard]] std::shared_ptr<NodeConnection> make_node_connection(
    boost::asio::io_context& ioc, WsUrl url, NodeConnection::Settings settings,
    NodeConnection::Events events, boost::asio::ssl::context* tls);

}  // namespace outboxd::sdk::detail
