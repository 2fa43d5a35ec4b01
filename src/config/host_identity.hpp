#pragma once

// Defaults derived from the machine (README, "Configuration"): a node id of hostname-pid and an
// advertised URL built from the listen address. Internal to src/config.

#include <string>
#include <string_view>

#include "outboxd/config/config.hpp"

namespace outboxd::config::detail {

inline constexpr std::size_t kMaxNodeIdBytes = 128;

// [A-Za-z0-9._-]{1,128}: safe in log lines, metric labels and URLs without escaping.
[[nodiscard]] bool is_valid_node_id(std::string_view node_id);

// "<hostname>-<pid>", with characters a node id may not hold replaced by '-'.
[[nodiscard]] std::string default_node_id();

// "ws://<host>:<port>/v1/workers". A wildcard listen host (0.0.0.0, ::) is not an address a
// worker can dial, so it becomes 127.0.0.1: right for one machine; a multi-host deployment
// sets OUTBOXD_ADVERTISE_URL. IPv6 hosts are bracketed.
[[nodiscard]] std::string default_advertise_url(const ListenAddress& listen, bool tls);

}  // namespace outboxd::config::detail
