#include "outboxd/auth/jwt_grants.hpp"

#include "outboxd/util/untrusted_text.hpp"

namespace outboxd::auth {

std::variant<Grant, std::string> JwtGrants::verify(
    std::string_view bearer, std::chrono::system_clock::time_point now) const {
    auto verified = verifier_.verify(bearer, now);
    if (auto* refused = std::get_if<JwtRefusal>(&verified)) return std::move(refused->message);
    const auto& claims = std::get<JwtClaims>(verified);
    Grant grant;
    grant.credential_id = "jwt:" + util::log_safe(claims.subject, 128);
    if (auto why = parse_claim_grants(claims.grants, grant.scopes)) return *why;
    grant.expires_at = claims.expires_at;
    return grant;
}

}  // namespace outboxd::auth
