#pragma once

// The two transports a node serves on its listen address: plain TCP, or TLS (HTTPS and
// wss://) when OUTBOXD_TLS_CERT_FILE and OUTBOXD_TLS_KEY_FILE are set. Sessions are written
// once, as templates over either stream; the few steps that differ are here.

#include <memory>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>

#include "outboxd/http/upgrade.hpp"

namespace outboxd::http {

inline PlainStream make_stream(boost::asio::ip::tcp::socket socket, PlainStream*,
                               const std::shared_ptr<boost::asio::ssl::context>&) {
    return PlainStream{std::move(socket)};
}
inline TlsStream make_stream(boost::asio::ip::tcp::socket socket, TlsStream*,
                             const std::shared_ptr<boost::asio::ssl::context>& tls) {
    return TlsStream{std::move(socket), *tls};
}

// Calls `next(ec)` once the stream is ready for HTTP: at once for plain TCP, after the
// server's TLS handshake (bounded by the stream's timer) for TLS.
template <typename Next>
void async_start(PlainStream& stream, Next next) {
    boost::asio::post(stream.get_executor(), [next = std::move(next)]() mutable { next({}); });
}
template <typename Next>
void async_start(TlsStream& stream, Next next) {
    stream.async_handshake(boost::asio::ssl::stream_base::server, std::move(next));
}

// Ends the sending side after a last response: a TCP half-close, or the TLS close_notify.
// `keep` holds the session alive until the TLS shutdown is done.
template <typename Keep>
void shutdown_send(PlainStream& stream, Keep) {
    boost::system::error_code ignored;
    stream.socket().shutdown(boost::asio::ip::tcp::socket::shutdown_send, ignored);
}
template <typename Keep>
void shutdown_send(TlsStream& stream, Keep keep) {
    stream.async_shutdown([&stream, keep = std::move(keep)](boost::system::error_code) {
        boost::system::error_code ignored;
        boost::beast::get_lowest_layer(stream).socket().close(ignored);
    });
}

}  // namespace outboxd::http
