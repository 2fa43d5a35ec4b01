#pragma once

// An AMQP target's URL: amqp:// or amqps:// (TLS), a host, an optional port (5672, 5671 with
// TLS) and an optional virtual host as the path's one segment, percent-encoded ("/%2f" is the
// vhost "/", as is no path at all). No query, no fragment, and no user info once
// amqp_kind.cpp has moved it to the credentials. Internal to src/sinks/amqp. Pure.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace outboxd::sinks::amqp::detail {

inline constexpr std::uint16_t kAmqpPort = 5672;
inline constexpr std::uint16_t kAmqpsPort = 5671;

struct AmqpUrl {
    bool tls = false;
    std::string host;  // IPv6 without brackets
    std::uint16_t port = kAmqpPort;
    std::string vhost = "/";  // decoded
    // The URL without user info, port spelled out: what is stored and shown.
    std::string url;
    std::optional<std::string> user;      // decoded
    std::optional<std::string> password;  // decoded
};

// Why `text` is not an AMQP URL, or nothing.
[[nodiscard]] std::optional<std::string> url_problem(std::string_view text);
// The URL taken apart (nothing when url_problem has something to say).
[[nodiscard]] std::optional<AmqpUrl> parse_url(std::string_view text);

}  // namespace outboxd::sinks::amqp::detail
