#include "http_client.hpp"

#include <stdexcept>

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

namespace outboxd::bench {

HttpReply http_request(const std::string& http_url, std::string_view method,
                       const std::string& target, const std::string& body) {
    namespace http = boost::beast::http;
    const auto verb = http::string_to_verb(method);
    if (verb == http::verb::unknown) {
        throw std::invalid_argument{"http_request: unknown method " + std::string{method}};
    }
    const auto hostport = http_url.substr(http_url.find("//") + 2);
    const auto colon = hostport.rfind(':');
    boost::asio::io_context ioc;
    boost::asio::ip::tcp::resolver resolver{ioc};
    boost::beast::tcp_stream stream{ioc};
    stream.expires_after(kHttpTimeout);
    stream.connect(resolver.resolve(hostport.substr(0, colon), hostport.substr(colon + 1)));
    http::request<http::string_body> request{verb, target, 11};
    request.set(http::field::host, hostport);
    if (!body.empty()) {
        request.set(http::field::content_type, "application/json");
        request.body() = body;
    }
    request.prepare_payload();
    http::write(stream, request);
    boost::beast::flat_buffer buffer;
    http::response<http::string_body> response;
    http::read(stream, buffer, response);
    boost::beast::error_code ignored;
    stream.socket().shutdown(boost::asio::ip::tcp::socket::shutdown_both, ignored);
    return {static_cast<int>(response.result_int()), response.body()};
}

}  // namespace outboxd::bench
