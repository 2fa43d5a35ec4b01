#pragma once

// The body of POST /v1/credentials (README, "Security"), checked:
// {"name","namespaces":[…|"*"],"roles":[…],"expires_at"?,"nodes"?}. Pure.

#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "outboxd/store/outbox_row.hpp"

namespace outboxd::http {

struct CredentialRequest {
    std::string name;
    std::vector<std::string> namespaces;  // {"*"} when '*' is among them
    std::vector<std::string> roles;
    std::optional<std::vector<std::string>> nodes;
    std::optional<store::TimePoint> expires_at;
};

struct CredentialBodyError {
    std::string field;  // the member at fault; empty: the body as a whole
    std::string message;
};

inline constexpr std::size_t kMaxCredentialNamespaces = 1000;
inline constexpr std::size_t kMaxCredentialNodes = 100;

// `now`: an expiry must lie after it.
[[nodiscard]] std::variant<CredentialRequest, CredentialBodyError> parse_credential_request(
    const std::string& body, store::TimePoint now);

}  // namespace outboxd::http
