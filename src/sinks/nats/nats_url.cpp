#include "nats_url.hpp"

#include <boost/url/parse.hpp>

#include "outboxd/sinks/http_push/target_check.hpp"
#include "outboxd/util/untrusted_text.hpp"

namespace outboxd::sinks::nats::detail {
namespace {

std::vector<std::string_view> split(std::string_view text) {
    std::vector<std::string_view> out;
    while (true) {
        const auto comma = text.find(',');
        auto part = text.substr(0, comma);
        while (!part.empty() && part.front() == ' ') part.remove_prefix(1);
        while (!part.empty() && part.back() == ' ') part.remove_suffix(1);
        out.push_back(part);
        if (comma == std::string_view::npos) return out;
        text.remove_prefix(comma + 1);
    }
}

// One server, or why it is not one.
std::optional<ServerUrl> parse_one(std::string_view text, std::string* why) {
    const auto fail = [&](std::string message) -> std::optional<ServerUrl> {
        if (why) *why = std::move(message);
        return std::nullopt;
    };
    const auto parsed = boost::urls::parse_absolute_uri(text);
    if (!parsed) return fail("'" + util::sanitize_text(text, 100) + "' is not an absolute URL");
    ServerUrl server;
    const auto scheme = parsed->scheme();
    if (scheme == "tls") {
        server.tls = true;
    } else if (scheme != "nats") {
        return fail("'" + util::sanitize_text(text, 100) + "' must be nats:// or tls://");
    }
    if (!parsed->has_authority() || parsed->encoded_host().empty()) {
        return fail("'" + util::sanitize_text(text, 100) + "' names no host");
    }
    if (!parsed->encoded_path().empty() && parsed->encoded_path() != "/") {
        return fail("a NATS server URL has no path");
    }
    if (parsed->has_query() || parsed->has_fragment()) {
        return fail("a NATS server URL has no query or fragment");
    }
    server.host = parsed->host_address();
    if (parsed->has_port()) {
        if (parsed->port_number() == 0) return fail("the port must be 1 to 65535");
        server.port = parsed->port_number();
    }
    if (parsed->has_userinfo()) {
        server.user = std::string{parsed->user()};
        if (parsed->has_password()) server.password = std::string{parsed->password()};
    }
    const bool v6 = server.host.find(':') != std::string::npos;
    server.url = std::string{scheme} + "://" + (v6 ? "[" + server.host + "]" : server.host) + ":" +
                 std::to_string(server.port);
    return server;
}

}  // namespace

std::optional<std::string> servers_problem(std::string_view text) {
    if (text.size() > http_push::kMaxUrlBytes) {
        return "is longer than " + std::to_string(http_push::kMaxUrlBytes) + " bytes";
    }
    const auto parts = split(text);
    if (parts.size() > kMaxServers) {
        return "lists more than " + std::to_string(kMaxServers) + " servers";
    }
    std::optional<std::string> user;
    for (const auto part : parts) {
        std::string why;
        const auto server = parse_one(part, &why);
        if (!server) return why;
        if (server->user && user && *server->user != *user) {
            return "names different users for its servers";
        }
        if (server->user) user = server->user;
    }
    return std::nullopt;
}

std::vector<ServerUrl> parse_servers(std::string_view text) {
    std::vector<ServerUrl> out;
    for (const auto part : split(text)) {
        if (auto server = parse_one(part, nullptr)) out.push_back(std::move(*server));
    }
    return out;
}

}  // namespace outboxd::sinks::nats::detail
