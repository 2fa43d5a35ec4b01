#pragma once

// Browser requests to a node that has no credential (README, "Security"). Such a node
// answers anyone, so a web page on another origin must not drive it through its visitor's
// browser: a request that carries a browser's marks (Origin, Sec-Fetch-*) is refused unless
// its Origin is the node itself and its Host names the node (an IP address, localhost or the
// advertised host) — which also stops DNS rebinding, where a page's own name comes to point
// at the node. Clients that are not browsers (curl, workers) send neither mark and pass.
// Pure.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "outboxd/http/server.hpp"

namespace outboxd::http {

struct BrowserMarks {
    std::optional<std::string_view> origin;  // the Origin header
    std::string_view host;                   // the Host header
    bool fetch_metadata = false;             // any Sec-Fetch-* header
};

// Why a browser request to an open node is refused, or nothing. `node_hosts`: names the
// node goes by besides addresses and localhost (its advertised host).
[[nodiscard]] std::optional<std::string> browser_refusal(
    const BrowserMarks& marks, const std::vector<std::string>& node_hosts);

}  // namespace outboxd::http
