#include "host_identity.hpp"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <cctype>

namespace outboxd::config::detail {
namespace {

bool is_node_id_char(char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '.' || c == '_' || c == '-';
}

std::string machine_hostname() {
    std::array<char, 256> buffer{};
    // POSIX leaves truncated names unterminated: keep the last byte zero.
    if (::gethostname(buffer.data(), buffer.size() - 1) != 0 || buffer[0] == '\0') {
        return "localhost";
    }
    return buffer.data();
}

}  // namespace

bool is_valid_node_id(std::string_view node_id) {
    return !node_id.empty() && node_id.size() <= kMaxNodeIdBytes &&
           std::all_of(node_id.begin(), node_id.end(), is_node_id_char);
}

std::string default_node_id() {
    const std::string suffix = "-" + std::to_string(::getpid());
    std::string host = machine_hostname();
    std::replace_if(
        host.begin(), host.end(), [](char c) { return !is_node_id_char(c); }, '-');
    host.resize(std::min(host.size(), kMaxNodeIdBytes - suffix.size()));
    return host + suffix;
}

std::string default_advertise_url(const ListenAddress& listen, bool tls) {
    std::string host = listen.host;
    if (host == "0.0.0.0" || host == "::") host = "127.0.0.1";
    if (host.find(':') != std::string::npos) host = "[" + host + "]";
    return std::string{tls ? "wss://" : "ws://"} + host + ":" + std::to_string(listen.port) +
           "/v1/workers";
}

}  // namespace outboxd::config::detail
