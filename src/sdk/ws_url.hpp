#pragma once

// The ws:// and wss:// URLs a worker connects to (seed URLs and the URLs nodes advertise).

#include <optional>
#include <string>
#include <string_view>

namespace outboxd::sdk::detail {

struct WsUrl {
    bool tls = false;       // wss://
    std::string host;       // for the resolver and TLS name checks: no brackets around IPv6
    std::string port;       // "80" (ws) or "443" (wss) when the URL names none
    std::string authority;  // for the Host header: host[:port] as written
    std::string target;     // path and query; "/" when the URL names none
};

// Parses "ws://host[:port][/path[?query]]" or the same with wss://, IPv6 hosts in brackets.
// Anything else (other schemes, user info, a bad port) yields nullopt.
[[nodiscard]] std::optional<WsUrl> parse_ws_url(std::string_view url);

}  // namespace outboxd::sdk::detail
