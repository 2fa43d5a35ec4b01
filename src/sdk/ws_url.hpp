#pragma once

// The ws:// URLs a worker connects to (seed URLs and the URLs nodes advertise).

#include <optional>
#include <string>
#include <string_view>

namespace outboxd::sdk::detail {

struct WsUrl {
    std::string host;       // for the resolver: no brackets around IPv6 literals
    std::string port;       // "80" when the URL names none
    std::string authority;  // for the Host header: host[:port] as written
    std::string target;     // path and query; "/" when the URL names none
};

// Parses "ws://host[:port][/path[?query]]", IPv6 hosts in brackets. Anything else (other
// schemes such as wss://, which this SDK does not speak yet, user info, a bad port) yields
// nullopt.
[[nodiscard]] std::optional<WsUrl> parse_ws_url(std::string_view url);

}  // namespace outboxd::sdk::detail
