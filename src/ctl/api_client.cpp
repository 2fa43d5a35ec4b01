#include "api_client.hpp"

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <openssl/ssl.h>

namespace outboxd::ctl {
namespace {

namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
namespace net = boost::asio;
namespace ssl = boost::asio::ssl;

constexpr std::size_t kMaxReplyBytes = std::size_t{64} * 1024 * 1024;

template <typename Stream>
Reply exchange(Stream& stream, bhttp::request<bhttp::string_body>& request) {
    bhttp::write(stream, request);
    beast::flat_buffer buffer;
    bhttp::response_parser<bhttp::string_body> parser;
    parser.body_limit(kMaxReplyBytes);
    bhttp::read(stream, buffer, parser);
    auto response = parser.release();
    return {static_cast<int>(response.result_int()), std::move(response.body())};
}

}  // namespace

Endpoint parse_endpoint(std::string_view url) {
    Endpoint endpoint;
    std::string_view rest;
    if (url.starts_with("http://")) {
        rest = url.substr(7);
    } else if (url.starts_with("https://")) {
        endpoint.tls = true;
        rest = url.substr(8);
    } else {
        throw ReachError{"--url must start with http:// or https://, got '" + std::string{url} +
                         "'"};
    }
    while (rest.ends_with('/')) rest.remove_suffix(1);
    if (rest.empty() || rest.find_first_of("/?#@ ") != std::string_view::npos) {
        throw ReachError{"--url must be scheme://host[:port] with no path, got '" +
                         std::string{url} + "'"};
    }
    std::string_view host = rest;
    std::string_view port = endpoint.tls ? "443" : "80";
    if (rest.starts_with('[')) {  // [v6]:port
        const auto close = rest.find(']');
        if (close == std::string_view::npos) throw ReachError{"--url: unclosed '[' in the host"};
        host = rest.substr(1, close - 1);
        if (close + 1 < rest.size()) {
            if (rest[close + 1] != ':') throw ReachError{"--url: expected ':' after ']'"};
            port = rest.substr(close + 2);
        }
    } else if (const auto colon = rest.rfind(':'); colon != std::string_view::npos) {
        host = rest.substr(0, colon);
        port = rest.substr(colon + 1);
    }
    const bool numeric = !port.empty() && port.size() <= 5 &&
                         port.find_first_not_of("0123456789") == std::string_view::npos;
    if (host.empty() || !numeric || std::stoi(std::string{port}) < 1 ||
        std::stoi(std::string{port}) > 65535) {
        throw ReachError{"--url: a host and a port between 1 and 65535 are required, got '" +
                         std::string{url} + "'"};
    }
    endpoint.host = host;
    endpoint.port = port;
    return endpoint;
}

std::string with_query(const std::string& target, std::string_view key, std::string_view value) {
    const char separator = target.find('?') == std::string::npos ? '?' : '&';
    return target + separator + encode_component(key) + "=" + encode_component(value);
}

std::string encode_component(std::string_view text) {
    static constexpr char kHex[] = "0123456789ABCDEF";
    std::string out;
    for (const char c : text) {
        const auto byte = static_cast<unsigned char>(c);
        const bool unreserved = (byte >= 'A' && byte <= 'Z') || (byte >= 'a' && byte <= 'z') ||
                                (byte >= '0' && byte <= '9') || c == '-' || c == '_' || c == '.' ||
                                c == '~';
        if (unreserved) {
            out += c;
        } else {
            out += '%';
            out += kHex[byte >> 4];
            out += kHex[byte & 0xF];
        }
    }
    return out;
}

ApiClient::ApiClient(Endpoint endpoint, ClientOptions options)
    : endpoint_(std::move(endpoint)), options_(std::move(options)) {}

Reply ApiClient::call(std::string_view method, const std::string& target,
                      const std::string& body) const {
    bhttp::request<bhttp::string_body> request{bhttp::string_to_verb(method), target, 11};
    const bool v6 = endpoint_.host.find(':') != std::string::npos;
    request.set(bhttp::field::host,
                (v6 ? "[" + endpoint_.host + "]" : endpoint_.host) + ":" + endpoint_.port);
    request.set(bhttp::field::user_agent, "outboxd-ctl");
    request.set(bhttp::field::accept, "application/json");
    if (options_.token) request.set(bhttp::field::authorization, "Bearer " + *options_.token);
    if (!body.empty()) {
        request.set(bhttp::field::content_type, "application/json");
        request.body() = body;
    }
    request.prepare_payload();
    const auto where = endpoint_.host + ":" + endpoint_.port;
    try {
        net::io_context ioc;
        net::ip::tcp::resolver resolver{ioc};
        const auto addresses = resolver.resolve(endpoint_.host, endpoint_.port);
        if (!endpoint_.tls) {
            beast::tcp_stream stream{ioc};
            stream.expires_after(options_.timeout);
            stream.connect(addresses);
            return exchange(stream, request);
        }
        ssl::context context{ssl::context::tls_client};
        context.set_verify_mode(ssl::verify_peer);
        if (options_.ca_file) {
            context.load_verify_file(*options_.ca_file);
        } else {
            context.set_default_verify_paths();
        }
        beast::ssl_stream<beast::tcp_stream> stream{ioc, context};
        if (!v6 && !SSL_set_tlsext_host_name(stream.native_handle(), endpoint_.host.c_str())) {
            throw ReachError{"cannot set the TLS server name " + endpoint_.host};
        }
        stream.set_verify_callback(ssl::host_name_verification{endpoint_.host});
        beast::get_lowest_layer(stream).expires_after(options_.timeout);
        beast::get_lowest_layer(stream).connect(addresses);
        stream.handshake(ssl::stream_base::client);
        return exchange(stream, request);
    } catch (const boost::system::system_error& error) {
        throw ReachError{"cannot reach " + where + ": " + error.code().message()};
    }
}

}  // namespace outboxd::ctl
