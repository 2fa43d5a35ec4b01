#pragma once

// What the broker kinds of destination (NATS, AMQP) share of their rules: where a broker may
// be (the host policy of every target, before and after its name is resolved), and the
// settings every broker target checks the same way (the body, its credentials, file paths,
// and no signing secret or headers, which only HTTP targets send).

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <sys/socket.h>

#include "outboxd/sinks/targets/destination.hpp"
#include "outboxd/store/target.hpp"

namespace outboxd::sinks::broker {

using targets::FieldProblem;
using targets::HostPolicy;

// One server of a broker target's URL.
struct Endpoint {
    std::string host;  // IPv6 without brackets
    std::uint16_t port = 0;
    bool tls = false;
};

// Why the policy refuses `endpoint` before its name is resolved (http_push::HostPolicy).
[[nodiscard]] std::optional<std::string> host_problem(const Endpoint& endpoint,
                                                      const HostPolicy& policy);

// The endpoint's addresses once resolved, each passed by the policy; or why not (a name that
// does not resolve, an address refused). Blocks on the resolver: not on the loop thread.
struct CheckedAddresses {
    std::vector<sockaddr_storage> addresses;
    std::optional<std::string> problem;
};
[[nodiscard]] CheckedAddresses checked_addresses(const Endpoint& endpoint,
                                                 const HostPolicy& policy);

// The settings every broker target checks alike: `body` is "input" or "task"; no
// signing_secret nor headers; each credential 1..4096 bytes without NUL, not starting with
// "enc:"; a `user` of 1..255 bytes; a password only with a user; `ca_file` an absolute path.
// `kind` names the kind in messages ("NATS").
[[nodiscard]] std::optional<FieldProblem> settings_problem(const store::TargetSettings& target,
                                                           std::string_view kind);

// Why `path` (a file on every node: a CA file, a .creds file) is not an absolute path.
[[nodiscard]] std::optional<FieldProblem> path_problem(const std::string* path,
                                                       std::string_view field);

// The option `name` of a target, or nullptr.
[[nodiscard]] const std::string* option(const store::TargetSettings& target, std::string_view name);

}  // namespace outboxd::sinks::broker
