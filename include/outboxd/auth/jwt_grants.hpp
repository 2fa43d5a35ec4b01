#pragma once

// Bearer JWTs as grants (README, "Security"): the authenticator's verifier of tokens from an
// identity provider. A token's `outboxd` claim lists "<namespace>:<role>" pairs, the way
// Temporal's claim mapper reads its permissions claim; its `sub` names it in the audit log
// ("jwt:<sub>") and its `exp` ends its worker sessions.

#include <string>
#include <variant>

#include "outboxd/auth/authenticator.hpp"
#include "outboxd/auth/jwt_verifier.hpp"

namespace outboxd::auth {

class JwtGrants final : public BearerVerifier {
public:
    explicit JwtGrants(JwtVerifier verifier) : verifier_(std::move(verifier)) {}

    [[nodiscard]] bool takes(std::string_view bearer) const override {
        return JwtVerifier::looks_like_jwt(bearer);
    }
    [[nodiscard]] std::variant<Grant, std::string> verify(
        std::string_view bearer, std::chrono::system_clock::time_point now) const override;

private:
    JwtVerifier verifier_;
};

}  // namespace outboxd::auth
