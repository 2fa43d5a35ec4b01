#pragma once

// One HTTP connection, over plain TCP or TLS (Stream: PlainStream or TlsStream): reads
// requests (bounded headers and body, an idle deadline), answers API routes, and hands a
// WebSocket upgrade of /v1/workers to the node's UpgradeHandler (upgrade.hpp) after checking
// its credential.

#include <memory>
#include <optional>

#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include "server_impl.hpp"
#include "session_stream.hpp"

namespace outboxd::http {

template <typename Stream>
class HttpSession : public std::enable_shared_from_this<HttpSession<Stream>> {
public:
    HttpSession(boost::asio::ip::tcp::socket socket, HttpServer::Impl& server);
    void run();

private:
    using Request = boost::beast::http::request<boost::beast::http::string_body>;
    using Header = boost::beast::http::request_header<>;

    void read();
    void on_header(boost::beast::error_code ec);
    void on_read(boost::beast::error_code ec);
    void upgrade(Request request);
    void write(ApiResponse response, bool keep_alive);
    void respond_to(Request request);
    // The refusal of a browser request to a node without credentials from elsewhere
    // (origin_check.hpp), or nothing.
    [[nodiscard]] std::optional<ApiResponse> cross_origin(const Header& header) const;

    std::unique_ptr<ConnectionSlot> slot_;
    std::shared_ptr<boost::asio::ssl::context> tls_;  // declared first: the stream uses it
    Stream stream_;
    boost::beast::flat_buffer buffer_;
    std::optional<boost::beast::http::request_parser<boost::beast::http::string_body>> parser_;
    HttpServer::Impl& server_;
    bool answered_ = false;  // this request's response is on its way (or it was upgraded)
    bool upgraded_ = false;  // the stream belongs to a WebSocket session now
};

extern template class HttpSession<PlainStream>;
extern template class HttpSession<TlsStream>;

// "Authorization: Bearer X" -> X.
[[nodiscard]] std::optional<std::string> bearer_of(boost::beast::string_view authorization);

}  // namespace outboxd::http
