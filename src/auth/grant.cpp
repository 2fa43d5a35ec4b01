#include "outboxd/auth/grant.hpp"

#include <algorithm>
#include <array>
#include <utility>

#include "outboxd/util/untrusted_text.hpp"

namespace outboxd::auth {
namespace {

constexpr std::array<std::pair<Role, std::string_view>, 6> kRoleNames{{
    {Role::worker, "worker"},
    {Role::producer, "producer"},
    {Role::reader, "reader"},
    {Role::read_payloads, "read_payloads"},
    {Role::operator_, "operator"},
    {Role::admin, "admin"},
}};

}  // namespace

std::string_view role_name(Role role) {
    for (const auto& [known, name] : kRoleNames) {
        if (known == role) return name;
    }
    return "unknown";
}

std::optional<Role> parse_role(std::string_view name) {
    for (const auto& [role, known] : kRoleNames) {
        if (known == name) return role;
    }
    return std::nullopt;
}

bool RoleSet::holds(Role role) const {
    if ((bits_ & bit(role)) != 0) return true;
    if ((bits_ & bit(Role::admin)) != 0) return true;
    // An operator changes what it reads; it reads it too (payloads need their own grant).
    return role == Role::reader && (bits_ & bit(Role::operator_)) != 0;
}

std::vector<Role> RoleSet::roles() const {
    std::vector<Role> held;
    for (const auto& [role, name] : kRoleNames) {
        if ((bits_ & bit(role)) != 0) held.push_back(role);
    }
    return held;
}

bool Grant::may(Role role, std::string_view ns) const {
    return std::any_of(scopes.begin(), scopes.end(), [&](const Scope& scope) {
        return (scope.namespace_name == kAllNamespaces || scope.namespace_name == ns) &&
               scope.roles.holds(role);
    });
}

bool Grant::may_somewhere(Role role) const {
    return std::any_of(scopes.begin(), scopes.end(),
                       [&](const Scope& scope) { return scope.roles.holds(role); });
}

bool Grant::may_everywhere(Role role) const { return may(role, kAllNamespaces); }

std::optional<std::vector<std::string>> Grant::namespaces_for(Role role) const {
    if (may_everywhere(role)) return std::nullopt;
    std::vector<std::string> names;
    for (const auto& scope : scopes) {
        if (scope.roles.holds(role) &&
            std::find(names.begin(), names.end(), scope.namespace_name) == names.end()) {
            names.push_back(scope.namespace_name);
        }
    }
    return names;
}

bool Grant::may_use_node(const std::optional<std::string>& node) const {
    if (nodes.empty()) return true;
    return node && std::find(nodes.begin(), nodes.end(), *node) != nodes.end();
}

std::vector<Scope> scopes_of(const std::vector<std::string>& namespaces,
                             const std::vector<Role>& roles) {
    RoleSet set;
    for (const auto role : roles) set.add(role);
    std::vector<Scope> scopes;
    scopes.reserve(namespaces.size());
    for (const auto& ns : namespaces) scopes.push_back({ns, set});
    return scopes;
}

std::optional<std::string> parse_claim_grants(const std::vector<std::string>& claims,
                                              std::vector<Scope>& scopes) {
    for (const auto& claim : claims) {
        // A namespace may hold ':'; a role never does.
        const auto colon = claim.rfind(':');
        if (colon == std::string::npos) {
            return "grant '" + util::log_safe(claim, 80) + "' is not <namespace>:<role>";
        }
        const std::string ns = claim.substr(0, colon);
        const auto role = parse_role(std::string_view{claim}.substr(colon + 1));
        if (!role) return "grant '" + util::log_safe(claim, 80) + "' names no known role";
        if (!valid_grant_namespace(ns)) {
            return "grant '" + util::log_safe(claim, 80) + "' names no valid namespace";
        }
        const auto same = std::find_if(scopes.begin(), scopes.end(), [&](const Scope& scope) {
            return scope.namespace_name == ns;
        });
        if (same != scopes.end()) {
            same->roles.add(*role);
        } else {
            RoleSet set;
            set.add(*role);
            scopes.push_back({ns, set});
        }
    }
    return std::nullopt;
}

bool valid_grant_namespace(std::string_view name) {
    return !util::identifier_problem(name, util::kMaxIdentifierBytes).has_value();
}

}  // namespace outboxd::auth
