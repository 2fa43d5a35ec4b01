#include "amqp_url.hpp"

#include <boost/url/parse.hpp>

#include "outboxd/sinks/http_push/target_check.hpp"
#include "outboxd/util/untrusted_text.hpp"

namespace outboxd::sinks::amqp::detail {
namespace {

// rabbitmq-c takes the vhost, user and password as C strings, and RabbitMQ's names are
// short: a NUL or a hostile length is refused here rather than cut there.
constexpr std::size_t kMaxVhostBytes = 255;

std::optional<AmqpUrl> parse(std::string_view text, std::string* why) {
    const auto fail = [&](std::string message) -> std::optional<AmqpUrl> {
        if (why) *why = std::move(message);
        return std::nullopt;
    };
    const auto parsed = boost::urls::parse_absolute_uri(text);
    if (!parsed) return fail("'" + util::sanitize_text(text, 100) + "' is not an absolute URL");
    AmqpUrl url;
    const auto scheme = parsed->scheme();
    if (scheme == "amqps") {
        url.tls = true;
        url.port = kAmqpsPort;
    } else if (scheme != "amqp") {
        return fail("'" + util::sanitize_text(text, 100) + "' must be amqp:// or amqps://");
    }
    if (!parsed->has_authority() || parsed->encoded_host().empty()) {
        return fail("'" + util::sanitize_text(text, 100) + "' names no host");
    }
    if (parsed->has_query() || parsed->has_fragment()) {
        return fail("an AMQP URL has no query or fragment");
    }
    url.host = parsed->host_address();
    if (parsed->has_port()) {
        if (parsed->port_number() == 0) return fail("the port must be 1 to 65535");
        url.port = parsed->port_number();
    }
    // The vhost is the path's one segment; no path, or "/", is the vhost "/" (the AMQP URI
    // spec reads "/" as the empty vhost, which nobody means).
    std::string_view path = parsed->encoded_path();
    if (!path.empty()) path.remove_prefix(1);
    if (path.find('/') != std::string_view::npos) {
        return fail("the path names one vhost: write '/' inside it as %2f");
    }
    if (!path.empty()) {
        const auto encoded = boost::urls::make_pct_string_view(path);
        if (!encoded) return fail("the vhost is not well percent-encoded");
        url.vhost = encoded->decode();
    }
    if (url.vhost.size() > kMaxVhostBytes || url.vhost.find('\0') != std::string::npos) {
        return fail("the vhost must be at most " + std::to_string(kMaxVhostBytes) +
                    " bytes without NUL");
    }
    if (parsed->has_userinfo()) {
        url.user = std::string{parsed->user()};
        if (parsed->has_password()) url.password = std::string{parsed->password()};
    }
    const bool v6 = url.host.find(':') != std::string::npos;
    url.url = std::string{scheme} + "://" + (v6 ? "[" + url.host + "]" : url.host) + ":" +
              std::to_string(url.port) + (path.empty() ? "" : "/" + std::string{path});
    return url;
}

}  // namespace

std::optional<std::string> url_problem(std::string_view text) {
    if (text.size() > http_push::kMaxUrlBytes) {
        return "is longer than " + std::to_string(http_push::kMaxUrlBytes) + " bytes";
    }
    std::string why;
    if (!parse(text, &why)) return why;
    return std::nullopt;
}

std::optional<AmqpUrl> parse_url(std::string_view text) { return parse(text, nullptr); }

}  // namespace outboxd::sinks::amqp::detail
