#include "ws_url.hpp"

#include <algorithm>
#include <cctype>

namespace outboxd::sdk::detail {
namespace {

constexpr std::string_view kScheme = "ws://";
constexpr std::string_view kTlsScheme = "wss://";
constexpr std::string_view kDefaultPort = "80";
constexpr std::string_view kDefaultTlsPort = "443";
constexpr long kMaxPort = 65535;

bool valid_port(std::string_view port) {
    if (port.empty() || port.size() > 5) return false;
    const bool digits =
        std::all_of(port.begin(), port.end(), [](unsigned char c) { return std::isdigit(c) != 0; });
    if (!digits) return false;
    const long value = std::stol(std::string{port});
    return value >= 1 && value <= kMaxPort;
}

}  // namespace

std::optional<WsUrl> parse_ws_url(std::string_view url) {
    const bool tls = url.starts_with(kTlsScheme);
    if (!tls && !url.starts_with(kScheme)) return std::nullopt;
    url.remove_prefix(tls ? kTlsScheme.size() : kScheme.size());

    const auto target_at = url.find_first_of("/?");
    const std::string_view authority = url.substr(0, target_at);
    std::string target{target_at == std::string_view::npos ? "/" : url.substr(target_at)};
    if (target.front() == '?') target.insert(target.begin(), '/');
    if (authority.empty() || authority.find('@') != std::string_view::npos) return std::nullopt;

    std::string_view host;
    std::string_view port;
    if (authority.front() == '[') {
        const auto close = authority.find(']');
        if (close == std::string_view::npos || close == 1) return std::nullopt;
        host = authority.substr(1, close - 1);
        const auto rest = authority.substr(close + 1);
        if (!rest.empty()) {
            if (rest.front() != ':') return std::nullopt;
            port = rest.substr(1);
            if (!valid_port(port)) return std::nullopt;
        }
    } else {
        const auto colon = authority.find(':');
        host = authority.substr(0, colon);
        if (colon != std::string_view::npos) {
            port = authority.substr(colon + 1);
            if (!valid_port(port)) return std::nullopt;
        }
        if (host.empty()) return std::nullopt;
    }
    const auto default_port = tls ? kDefaultTlsPort : kDefaultPort;
    return WsUrl{tls, std::string{host}, std::string{port.empty() ? default_port : port},
                 std::string{authority}, std::move(target)};
}

}  // namespace outboxd::sdk::detail
