#include "database_url.hpp"

#include <stdexcept>

namespace outboxd::chaos {

std::string database_url(const std::vector<std::uint16_t>& ports) {
    if (ports.empty()) throw std::invalid_argument("database_url: no server port");
    if (ports.size() == 1) {
        return "postgresql://postgres@127.0.0.1:" + std::to_string(ports.front()) + "/postgres";
    }
    std::string hosts;
    std::string port_list;
    for (const auto port : ports) {
        if (!hosts.empty()) {
            hosts += ',';
            port_list += ',';
        }
        hosts += "127.0.0.1";
        port_list += std::to_string(port);
    }
    return "host=" + hosts + " port=" + port_list +
           " dbname=postgres user=postgres target_session_attrs=read-write";
}

}  // namespace outboxd::chaos
