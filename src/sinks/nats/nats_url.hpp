#pragma once

// A NATS target's URL: one or more servers, comma-separated ("nats://a:4222,nats://b:4222"),
// each nats:// or tls://, a host and an optional port (4222), nothing else once the user
// info is taken out (nats_kind.cpp moves it to the credentials). Internal to src/sinks/nats.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace outboxd::sinks::nats::detail {

inline constexpr std::size_t kMaxServers = 16;

struct ServerUrl {
    std::string url;  // as given, without user info
    bool tls = false;
    std::string host;  // IPv6 without brackets
    std::uint16_t port = 4222;
    std::optional<std::string> user;
    std::optional<std::string> password;
};

// Why `text` is not a list of server URLs, or nothing.
[[nodiscard]] std::optional<std::string> servers_problem(std::string_view text);
// The servers of a URL list (servers_problem first: bad entries are skipped).
[[nodiscard]] std::vector<ServerUrl> parse_servers(std::string_view text);

}  // namespace outboxd::sinks::nats::detail
