#include "http_session.hpp"

#include <type_traits>

#include <boost/beast/ssl.hpp>
#include <boost/beast/websocket/rfc6455.hpp>

#include "api_routes.hpp"
#include "origin_check.hpp"
#include "outboxd/http/upgrade.hpp"

namespace outboxd::http {

namespace beast = boost::beast;
namespace bhttp = beast::http;

namespace {

// Headers beyond this end the request (431-like: Beast reports header_limit).
constexpr std::uint32_t kMaxHeaderBytes = 64 * 1024;

}  // namespace

std::optional<std::string> bearer_of(beast::string_view authorization) {
    constexpr std::string_view kPrefix = "Bearer ";
    const std::string_view value{authorization.data(), authorization.size()};
    if (value.size() <= kPrefix.size() || value.substr(0, kPrefix.size()) != kPrefix)
        return std::nullopt;
    return std::string{value.substr(kPrefix.size())};
}

template <typename Stream>
HttpSession<Stream>::HttpSession(boost::asio::ip::tcp::socket socket, HttpServer::Impl& server)
    : slot_(std::make_unique<ConnectionSlot>(server.open_connections,
                                             server.services.metrics.connections_open)),
      tls_(server.tls),
      stream_(make_stream(std::move(socket), static_cast<Stream*>(nullptr), tls_)),
      server_(server) {}

template <typename Stream>
void HttpSession<Stream>::run() {
    // The TLS handshake counts against the idle deadline: a client that never finishes it
    // holds its slot no longer than one that never sends a request.
    beast::get_lowest_layer(stream_).expires_after(server_.settings.http_idle_timeout);
    async_start(stream_, [self = this->shared_from_this()](beast::error_code ec) {
        if (!ec) self->read();
    });
}

template <typename Stream>
void HttpSession<Stream>::read() {
    parser_.emplace();
    // The body's bound is set once the header passed the token check: a declared length
    // beyond it would otherwise be refused (413) before a client without a token is (401).
    parser_->body_limit(boost::none);
    parser_->header_limit(kMaxHeaderBytes);
    answered_ = false;
    beast::get_lowest_layer(stream_).expires_after(server_.settings.http_idle_timeout);
    // The header first: a client without the token its route needs is answered before its
    // body is read (up to OUTBOXD_MAX_BODY_BYTES on every connection otherwise).
    bhttp::async_read_header(stream_, buffer_, *parser_,
                             [self = this->shared_from_this()](beast::error_code ec, std::size_t) {
                                 self->on_header(ec);
                             });
}

template <typename Stream>
void HttpSession<Stream>::on_header(beast::error_code ec) {
    if (ec) return on_read(ec);
    const auto& header = parser_->get();
    const std::string_view target{header.target().data(), header.target().size()};
    if (auto refused = cross_origin(header)) return write(std::move(*refused), false);
    const std::string_view method{header.method_string().data(), header.method_string().size()};
    if (auto refused =
            server_.router.refusal(method, target, bearer_of(header[bhttp::field::authorization]),
                                   beast::websocket::is_upgrade(header))) {
        return write(std::move(*refused), false);
    }
    const auto max_body = server_.settings.max_body_bytes;
    if (const auto length = parser_->content_length(); length && *length > max_body) {
        return on_read(bhttp::error::body_limit);
    }
    parser_->body_limit(max_body);  // bounds a chunked body as it arrives
    bhttp::async_read(stream_, buffer_, *parser_,
                      [self = this->shared_from_this()](beast::error_code read_ec, std::size_t) {
                          self->on_read(read_ec);
                      });
}

template <typename Stream>
std::optional<ApiResponse> HttpSession<Stream>::cross_origin(const Header& header) const {
    if (server_.services.auth.guarded()) return std::nullopt;
    BrowserMarks marks;
    if (const auto origin = header.find(bhttp::field::origin); origin != header.end()) {
        marks.origin = std::string_view{origin->value().data(), origin->value().size()};
    }
    const auto host = header[bhttp::field::host];
    marks.host = std::string_view{host.data(), host.size()};
    for (const auto& field : header) {
        const auto name = field.name_string();
        if (name.size() > 10 && beast::iequals(name.substr(0, 10), "sec-fetch-")) {
            marks.fetch_metadata = true;
        }
    }
    const auto why = browser_refusal(marks, server_.settings.node_hosts);
    if (!why) return std::nullopt;
    server_.services.metrics.protocol_errors_total.Add({{"code", "forbidden"}}).Increment();
    return error_response(403, "forbidden", *why);
}

template <typename Stream>
void HttpSession<Stream>::on_read(beast::error_code ec) {
    if (ec == bhttp::error::body_limit) {
        return write(error_response(413, "body_too_large",
                                    "request body exceeds " +
                                        std::to_string(server_.settings.max_body_bytes) + " bytes"),
                     false);
    }
    if (ec) {
        // Malformed HTTP: answer once, then close. Anything else (EOF, timeout): just close.
        if (ec != bhttp::error::end_of_stream &&
            ec.category() == bhttp::make_error_code(bhttp::error::bad_target).category()) {
            return write(
                error_response(400, "bad_request", "malformed HTTP request: " + ec.message()),
                false);
        }
        return shutdown_send(stream_, this->shared_from_this());
    }
    // One fault, one request: whatever a handler throws ends this request with a 500 and
    // this connection, never the node (unless it was answered already, or handed over as
    // a WebSocket: then it only ends the connection).
    try {
        respond_to(parser_->release());
    } catch (const std::exception& error) {
        server_.fault("http", error.what());
        if (!answered_) {
            write(error_response(500, "internal", "the request failed unexpectedly"), false);
        } else if (!upgraded_) {
            beast::get_lowest_layer(stream_).close();
        }
    }
}

template <typename Stream>
void HttpSession<Stream>::respond_to(Request request) {
    if (beast::websocket::is_upgrade(request)) return upgrade(std::move(request));

    ApiRequest api;
    api.method = std::string{request.method_string()};
    api.target = std::string{request.target()};
    api.body = std::move(request.body());
    api.bearer = bearer_of(request[bhttp::field::authorization]);
    const bool keep_alive = request.keep_alive();
    server_.router.handle(api, [self = this->shared_from_this(), keep_alive](ApiResponse response) {
        self->write(std::move(response), keep_alive);
    });
}

template <typename Stream>
void HttpSession<Stream>::upgrade(Request request) {
    answered_ = true;
    const auto parsed =
        parse_target(std::string_view{request.target().data(), request.target().size()});
    const auto* target = std::get_if<ParsedTarget>(&parsed);
    if (!target || target->segments != std::vector<std::string>{"v1", "workers"}) {
        return write(error_response(404, "not_found", "WebSocket endpoint is /v1/workers"), false);
    }
    auto presented = bearer_of(request[bhttp::field::authorization]);
    if (!presented) {
        if (const auto it = target->query.find("token"); it != target->query.end())
            presented = it->second;
    }
    auto authenticated = server_.services.auth.authenticate(presented, auth::Area::workers);
    if (auto* why = std::get_if<std::string>(&authenticated)) {
        server_.services.metrics.protocol_errors_total.Add({{"code", "unauthorized"}}).Increment();
        return write(error_response(401, "unauthorized", *why), false);
    }
    auto grant = std::get<std::shared_ptr<const auth::Grant>>(std::move(authenticated));
    if (!grant->may_somewhere(auth::Role::worker)) {
        server_.services.metrics.protocol_errors_total.Add({{"code", "forbidden"}}).Increment();
        return write(forbidden(auth::Role::worker, "any namespace"), false);
    }
    auto* workers = server_.services.workers;
    if (!workers) {
        return write(error_response(404, "not_found", "this node serves no WebSocket workers"),
                     false);
    }
    beast::get_lowest_layer(stream_).expires_never();
    upgraded_ = true;
    if constexpr (std::is_same_v<Stream, TlsStream>) {
        workers->upgrade(std::move(stream_), std::move(request), std::move(slot_), std::move(tls_),
                         std::move(grant));
    } else {
        workers->upgrade(std::move(stream_), std::move(request), std::move(slot_),
                         std::move(grant));
    }
}

template <typename Stream>
void HttpSession<Stream>::write(ApiResponse response, bool keep_alive) {
    answered_ = true;
    auto message = std::make_shared<bhttp::response<bhttp::string_body>>(
        static_cast<bhttp::status>(response.status), 11);
    message->set(bhttp::field::server, "outboxd");
    if constexpr (std::is_same_v<Stream, TlsStream>) {
        // Browsers that reached the node over HTTPS stay on it.
        message->set(bhttp::field::strict_transport_security, "max-age=31536000");
    }
    message->set(bhttp::field::content_type, response.content_type);
    for (const auto& [name, value] : response.headers) message->set(name, value);
    message->keep_alive(keep_alive);
    message->body() = std::move(response.body);
    message->prepare_payload();
    beast::get_lowest_layer(stream_).expires_after(server_.settings.http_idle_timeout);
    bhttp::async_write(
        stream_, *message,
        [self = this->shared_from_this(), message, keep_alive](beast::error_code ec, std::size_t) {
            if (ec) return;
            if (keep_alive) return self->read();
            shutdown_send(self->stream_, self);
        });
}

template class HttpSession<PlainStream>;
template class HttpSession<TlsStream>;

}  // namespace outboxd::http
