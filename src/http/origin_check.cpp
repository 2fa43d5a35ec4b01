#include "origin_check.hpp"

#include <algorithm>
#include <cctype>

#include <boost/asio/ip/address.hpp>

namespace outboxd::http {
namespace {

std::string lower(std::string_view text) {
    std::string out{text};
    std::transform(out.begin(), out.end(), out.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return out;
}

bool names_node(const std::string& host, const std::vector<std::string>& node_hosts) {
    if (host == "localhost") return true;
    boost::system::error_code ec;
    (void)boost::asio::ip::make_address(host, ec);
    if (!ec) return true;
    return std::any_of(node_hosts.begin(), node_hosts.end(),
                       [&](const std::string& name) { return lower(name) == host; });
}

}  // namespace

std::string host_of(std::string_view authority) {
    if (authority.starts_with('[')) {
        const auto close = authority.find(']');
        return lower(authority.substr(
            1, close == std::string_view::npos ? authority.size() - 1 : close - 1));
    }
    const auto colon = authority.rfind(':');
    return lower(colon == std::string_view::npos ? authority : authority.substr(0, colon));
}

std::optional<std::string> browser_refusal(const BrowserMarks& marks,
                                           const std::vector<std::string>& node_hosts) {
    if (!marks.origin && !marks.fetch_metadata) return std::nullopt;
    if (!names_node(host_of(marks.host), node_hosts)) {
        return "this node has no credential and answers browsers only at its own address "
               "(Host names another)";
    }
    if (marks.origin) {
        // "null" (a sandboxed or file page) and any other origin than the node's own.
        const auto scheme = marks.origin->find("://");
        const auto authority = scheme == std::string_view::npos ? std::string_view{}
                                                                : marks.origin->substr(scheme + 3);
        if (authority.empty() || lower(authority) != lower(marks.host)) {
            return "this node has no credential and refuses requests from other origins";
        }
    }
    return std::nullopt;
}

}  // namespace outboxd::http
