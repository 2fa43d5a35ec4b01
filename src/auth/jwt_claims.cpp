#include "jwt_claims.hpp"

#include <cmath>
#include <optional>
#include <string>

#include "quoted_text.hpp"

namespace outboxd::auth {
namespace {

using std::chrono::system_clock;
using Json = nlohmann::json;

// The latest NumericDate taken, 2200-01-01T00:00:00Z: system_clock counts nanoseconds in 64
// bits and ends in 2262, so a later `exp` would overflow it.
constexpr double kMaxNumericDate = 7'258'118'400.0;

JwtRefusal refuse(JwtRefusalReason reason, std::string message) {
    return JwtRefusal{reason, std::move(message)};
}

// A NumericDate (seconds since the epoch, possibly fractional) within system_clock's range.
std::optional<system_clock::time_point> numeric_date(const Json& value) {
    if (!value.is_number()) return std::nullopt;
    const double seconds = value.get<double>();
    if (!std::isfinite(seconds) || seconds < 0 || seconds > kMaxNumericDate) return std::nullopt;
    return system_clock::time_point{
        std::chrono::duration_cast<system_clock::duration>(std::chrono::duration<double>{seconds})};
}

std::string seconds_text(system_clock::duration duration) {
    return std::to_string(std::chrono::duration_cast<std::chrono::seconds>(duration).count()) +
           " s";
}

std::optional<JwtRefusal> lifetime_problem(const Json& payload, const ClaimRules& rules,
                                           system_clock::time_point now,
                                           system_clock::time_point& expires_at) {
    const auto exp = payload.find("exp");
    if (exp == payload.end()) return refuse(JwtRefusalReason::claims, "token has no 'exp' claim");
    const auto expiry = numeric_date(*exp);
    if (!expiry) {
        return refuse(JwtRefusalReason::claims, "'exp' is not a date in seconds before 2200");
    }
    expires_at = *expiry;
    if (now >= *expiry + rules.clock_skew) {
        return refuse(JwtRefusalReason::expired,
                      "token expired " + seconds_text(now - *expiry) +
                          " ago (clock skew allowed: " + seconds_text(rules.clock_skew) + ")");
    }
    if (const auto nbf = payload.find("nbf"); nbf != payload.end()) {
        const auto not_before = numeric_date(*nbf);
        if (!not_before) {
            return refuse(JwtRefusalReason::claims, "'nbf' is not a date in seconds before 2200");
        }
        if (now + rules.clock_skew < *not_before) {
            return refuse(
                JwtRefusalReason::not_yet_valid,
                "token is not valid yet: its 'nbf' is " + seconds_text(*not_before - now) +
                    " ahead (clock skew allowed: " + seconds_text(rules.clock_skew) + ")");
        }
    }
    return std::nullopt;
}

std::optional<JwtRefusal> issuer_problem(const Json& payload, std::string_view issuer) {
    if (issuer.empty()) return std::nullopt;
    const auto iss = payload.find("iss");
    if (iss == payload.end() || !iss->is_string()) {
        return refuse(JwtRefusalReason::issuer,
                      "token has no 'iss' string; the issuer must be " + in_quotes(issuer));
    }
    if (iss->get_ref<const std::string&>() != issuer) {
        return refuse(JwtRefusalReason::issuer, "token's issuer " +
                                                    in_quotes(iss->get_ref<const std::string&>()) +
                                                    " is not the configured " + in_quotes(issuer));
    }
    return std::nullopt;
}

std::optional<JwtRefusal> audience_problem(const Json& payload, std::string_view audience) {
    if (audience.empty()) return std::nullopt;
    const auto aud = payload.find("aud");
    if (aud == payload.end()) {
        return refuse(JwtRefusalReason::audience,
                      "token has no 'aud' claim; it must name " + in_quotes(audience));
    }
    if (aud->is_string()) {
        if (aud->get_ref<const std::string&>() == audience) return std::nullopt;
        return refuse(JwtRefusalReason::audience,
                      "token's audience " + in_quotes(aud->get_ref<const std::string&>()) +
                          " is not the configured " + in_quotes(audience));
    }
    if (!aud->is_array()) {
        return refuse(JwtRefusalReason::audience, "'aud' is neither a string nor an array");
    }
    for (const auto& item : *aud) {
        if (item.is_string() && item.get_ref<const std::string&>() == audience) {
            return std::nullopt;
        }
    }
    return refuse(JwtRefusalReason::audience, "token's audiences (" + std::to_string(aud->size()) +
                                                  ") do not include the configured " +
                                                  in_quotes(audience));
}

std::variant<std::vector<std::string>, JwtRefusal> grants_of(const Json& payload,
                                                             std::size_t max_grants) {
    const auto claim = payload.find(kGrantsClaim);
    if (claim == payload.end()) {
        return refuse(JwtRefusalReason::claims,
                      "token has no '" + std::string{kGrantsClaim} + "' claim: it grants nothing");
    }
    if (!claim->is_array()) {
        return refuse(JwtRefusalReason::claims,
                      "'" + std::string{kGrantsClaim} + "' claim is not an array of strings");
    }
    if (claim->size() > max_grants) {
        return refuse(JwtRefusalReason::claims, "token carries " + std::to_string(claim->size()) +
                                                    " grants, more than the limit of " +
                                                    std::to_string(max_grants));
    }
    std::vector<std::string> grants;
    grants.reserve(claim->size());
    for (const auto& item : *claim) {
        if (!item.is_string()) {
            return refuse(JwtRefusalReason::claims,
                          "'" + std::string{kGrantsClaim} + "' claim holds a non-string grant");
        }
        grants.push_back(item.get<std::string>());
    }
    return grants;
}

}  // namespace

std::variant<JwtClaims, JwtRefusal> check_claims(const Json& payload, const ClaimRules& rules,
                                                 system_clock::time_point now) {
    JwtClaims claims;
    if (auto problem = lifetime_problem(payload, rules, now, claims.expires_at)) {
        return std::move(*problem);
    }
    if (auto problem = issuer_problem(payload, rules.issuer)) return std::move(*problem);
    if (auto problem = audience_problem(payload, rules.audience)) return std::move(*problem);
    if (const auto sub = payload.find("sub"); sub != payload.end()) {
        if (!sub->is_string()) return refuse(JwtRefusalReason::claims, "'sub' is not a string");
        claims.subject = sub->get<std::string>();
    }
    auto grants = grants_of(payload, rules.max_grants);
    if (auto* problem = std::get_if<JwtRefusal>(&grants)) return std::move(*problem);
    claims.grants = std::get<std::vector<std::string>>(std::move(grants));
    return claims;
}

}  // namespace outboxd::auth
