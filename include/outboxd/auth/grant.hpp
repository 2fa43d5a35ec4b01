#pragma once

// What a credential may reach (README, "Security"): roles over namespaces. A managed
// credential grants each of its roles over each of its namespaces; a JWT grants the pairs
// its `outboxd` claim lists ("billing:worker", "*:admin"); a bootstrap token grants its one
// role over every namespace. Pure; no I/O.
//
//   worker         hello and answer tasks of its namespaces
//   producer       stage rows into its namespaces
//   reader         read rows, dead letters, workflows, settings, targets and schedules
//   read_payloads  see inputs and results where it reads (with reader or operator)
//   operator       change what it may read (pause, cancel, requeue, purge, settings,
//                  targets, schedules); reads too
//   admin          everything in its namespaces; over '*' also credentials and the audit log

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace outboxd::auth {

enum class Role : std::uint8_t { worker, producer, reader, read_payloads, operator_, admin };

inline constexpr std::string_view kAllNamespaces = "*";

[[nodiscard]] std::string_view role_name(Role role);
[[nodiscard]] std::optional<Role> parse_role(std::string_view name);

// A set of roles, with what each one implies (admin all, operator reader).
class RoleSet {
public:
    RoleSet() = default;
    void add(Role role) { bits_ |= bit(role); }
    // Whether the set holds `role`, itself or through a role that implies it.
    [[nodiscard]] bool holds(Role role) const;
    [[nodiscard]] bool empty() const { return bits_ == 0; }
    [[nodiscard]] std::vector<Role> roles() const;

private:
    static constexpr std::uint8_t bit(Role role) {
        return static_cast<std::uint8_t>(1U << static_cast<unsigned>(role));
    }
    std::uint8_t bits_ = 0;
};

// Roles over one namespace, or over every one ('*').
struct Scope {
    std::string namespace_name;  // or kAllNamespaces
    RoleSet roles;
};

struct Grant {
    // Who: a managed credential's id, "bootstrap:admin", "bootstrap:worker", "jwt:<sub>",
    // or "anonymous" on an open node. Recorded in the audit log; never a secret.
    std::string credential_id;
    std::vector<Scope> scopes;
    // None: it does not expire. Checked when a request or hello is authenticated and, for
    // open worker sessions, each time the credentials are read again.
    std::optional<std::chrono::system_clock::time_point> expires_at;
    // Node labels a worker may claim on; empty: any.
    std::vector<std::string> nodes;

    // Whether it holds `role` over namespace `ns`.
    [[nodiscard]] bool may(Role role, std::string_view ns) const;
    // Whether it holds `role` over any namespace (a route's first gate).
    [[nodiscard]] bool may_somewhere(Role role) const;
    // Whether it holds `role` over every namespace ('*').
    [[nodiscard]] bool may_everywhere(Role role) const;
    // The namespaces it holds `role` over; none: every namespace.
    [[nodiscard]] std::optional<std::vector<std::string>> namespaces_for(Role role) const;
    // Whether a worker of it may claim on a node labelled `node` (none: an unlabelled one).
    [[nodiscard]] bool may_use_node(const std::optional<std::string>& node) const;
    [[nodiscard]] bool expired(std::chrono::system_clock::time_point now) const {
        return expires_at && *expires_at <= now;
    }
};

// A grant's role over its namespaces, as a managed credential states them: each role over
// each namespace.
[[nodiscard]] std::vector<Scope> scopes_of(const std::vector<std::string>& namespaces,
                                           const std::vector<Role>& roles);
// The pairs of a JWT's `outboxd` claim ("<namespace>:<role>"), or why one is malformed.
[[nodiscard]] std::optional<std::string> parse_claim_grants(const std::vector<std::string>& claims,
                                                            std::vector<Scope>& scopes);

// Whether `name` may be a namespace in a grant: what the outbox takes as a namespace, or
// '*'.
[[nodiscard]] bool valid_grant_namespace(std::string_view name);

}  // namespace outboxd::auth
