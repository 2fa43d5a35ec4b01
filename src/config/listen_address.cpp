#include <algorithm>
#include <cctype>
#include <charconv>
#include <string_view>

#include "outboxd/config/config.hpp"

namespace outboxd::config {
namespace {

constexpr std::string_view kWildcardHost = "0.0.0.0";

bool is_host_char(char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '.' || c == '-' || c == '_';
}

// Hex digits, ':' and '.' (IPv4-mapped), '%' and a zone name (fe80::1%eth0).
bool is_ipv6_char(char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == ':' || c == '.' || c == '%';
}

}  // namespace

ListenAddress parse_listen(const std::string& text, const std::string& setting) {
    const auto refuse = [&](std::string_view problem) {
        throw ConfigError(setting + ": " + std::string{problem} + ", got '" + text + "'");
    };
    const std::string_view whole{text};
    ListenAddress address;
    std::string_view port;
    if (whole.starts_with('[')) {
        const auto close = whole.find(']');
        if (close == std::string_view::npos || whole.substr(close + 1, 1) != ":") {
            refuse("must be [ipv6]:port");
        }
        const std::string_view host = whole.substr(1, close - 1);
        if (host.empty() || !std::all_of(host.begin(), host.end(), is_ipv6_char)) {
            refuse("must be [ipv6]:port with an IPv6 address in the brackets");
        }
        address.host = std::string{host};
        port = whole.substr(close + 2);
    } else {
        const auto colon = whole.rfind(':');
        if (colon == std::string_view::npos) refuse("must be host:port, [ipv6]:port or :port");
        const std::string_view host = whole.substr(0, colon);
        if (host.find(':') != std::string_view::npos) {
            refuse("must put an IPv6 host in brackets ([::1]:8080)");
        }
        if (!std::all_of(host.begin(), host.end(), is_host_char)) {
            refuse("must be host:port with a host name or IPv4 address");
        }
        address.host = host.empty() ? std::string{kWildcardHost} : std::string{host};
        port = whole.substr(colon + 1);
    }
    unsigned value = 0;
    const char* end = port.data() + port.size();
    const auto [stop, error] = std::from_chars(port.data(), end, value);
    if (port.empty() || error != std::errc{} || stop != end || value > 65535) {
        refuse("must end in a port between 0 and 65535");
    }
    address.port = static_cast<std::uint16_t>(value);
    return address;
}

}  // namespace outboxd::config
