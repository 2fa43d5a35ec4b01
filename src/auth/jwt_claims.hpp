#pragma once

// The checks of a verified token's claims: its lifetime, issuer, audience and grants.
// Internal to src/auth; pure, the clock is passed in.

#include <chrono>
#include <cstddef>
#include <string_view>
#include <variant>

#include <nlohmann/json.hpp>

#include "outboxd/auth/jwt_verifier.hpp"

namespace outboxd::auth {

// The name of the claim that carries a token's grants.
inline constexpr std::string_view kGrantsClaim = "outboxd";

struct ClaimRules {
    std::string_view issuer;    // empty: not checked
    std::string_view audience;  // empty: not checked
    std::chrono::milliseconds clock_skew{0};
    std::size_t max_grants = 0;
};

// The claims of a payload whose signature has been verified, or why they are refused: `exp`
// is required, `nbf` honoured, both with the clock skew; `iss` and `aud` (a string or an
// array of strings) when configured; the grants claim must be an array of strings.
[[nodiscard]] std::variant<JwtClaims, JwtRefusal> check_claims(
    const nlohmann::json& payload, const ClaimRules& rules,
    std::chrono::system_clock::time_point now);

}  // namespace outboxd::auth
