#pragma once

// Bearer JWTs from an organisation's identity provider, checked against the public keys the
// operator configured (OUTBOXD_JWT_KEYS_FILE): RS256 with an RSA key, ES256 with an EC P-256
// key, nothing else. Signatures are verified by libcjose; this class decides which tokens
// and keys it may be shown at all (the header's alg is judged here first, so that an
// `alg: none` or HS256 token never reaches the library) and checks the claims.
//
// A JwtVerifier is immutable once loaded. Copies share its keys. verify() is const, touches
// no shared mutable state and may run on any thread, several at once; it leaves the
// thread's OpenSSL error queue empty. Nothing here throws but std::bad_alloc.

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace outboxd::auth {

struct JwtSettings {
    // The content of OUTBOXD_JWT_KEYS_FILE: one or more PEM public keys ("BEGIN PUBLIC KEY",
    // RSA of at least 2048 bits or EC P-256), or a JWKS document {"keys":[…]} (its keys
    // marked "use" other than "sig", or "alg" other than RS256/ES256, are passed over).
    std::string keys_text;
    std::string issuer;    // OUTBOXD_JWT_ISSUER: the `iss` a token must carry; empty: not checked
    std::string audience;  // OUTBOXD_JWT_AUDIENCE: must be (among) `aud`; empty: not checked
    // OUTBOXD_JWT_CLOCK_SKEW_MS: how far `exp` and `nbf` may be off the node's clock.
    std::chrono::milliseconds clock_skew{60000};
    // A longer bearer is refused before it is decoded.
    std::size_t max_token_bytes = 8192;
    // The most grants one token may carry in its `outboxd` claim.
    std::size_t max_grants = 64;
};

// What a verified token says.
struct JwtClaims {
    std::string subject;              // `sub`; empty when absent
    std::vector<std::string> grants;  // the `outboxd` claim, as given ("billing:worker", …)
    std::chrono::system_clock::time_point expires_at;  // `exp`
};

// Why a token is refused, for a metric's label; the message says it to a person.
enum class JwtRefusalReason {
    malformed,      // too long, not three base64url parts, not JSON, a `crit` header
    algorithm,      // alg none, HS*, anything but RS256 and ES256
    no_key,         // no configured key for its alg (and kid)
    signature,      // unsigned, or the signature does not verify
    expired,        // `exp` has passed, beyond the clock skew
    not_yet_valid,  // `nbf` is ahead, beyond the clock skew
    issuer,         // `iss` is missing or not the configured issuer
    audience,       // `aud` is missing or does not name the configured audience
    claims,         // no `exp`, grants missing or malformed, too many grants, bad `sub`
};

// The message quotes at most short, escaped pieces of the token (an alg, a kid, an issuer),
// never the token itself.
struct JwtRefusal {
    JwtRefusalReason reason = JwtRefusalReason::malformed;
    std::string message;
};

struct JwtKeySet;  // the loaded keys (src/auth/jwt_keys.hpp)

class JwtVerifier final {
public:
    // The verifier for these settings, or why they are unusable: no key, a PEM block or
    // JWKS document that does not parse, a private key, an unsupported key type or curve, an
    // RSA key under 2048 bits. The message names the key at fault ("PEM key 2", "JWKS key 0").
    [[nodiscard]] static std::variant<JwtVerifier, std::string> load(const JwtSettings& settings);

    // The token's claims, or why it is refused. `now` is the node's clock.
    [[nodiscard]] std::variant<JwtClaims, JwtRefusal> verify(
        std::string_view token, std::chrono::system_clock::time_point now) const;

    // Whether a bearer has the shape of a JWT: three non-empty base64url parts separated by
    // dots. Cheap; says nothing about whether it verifies.
    [[nodiscard]] static bool looks_like_jwt(std::string_view bearer) noexcept;

    // How many keys were loaded (for the startup log line).
    [[nodiscard]] std::size_t key_count() const noexcept;

private:
    JwtVerifier(const JwtSettings& settings, std::shared_ptr<const JwtKeySet> keys);

    std::shared_ptr<const JwtKeySet> keys_;
    std::string issuer_;
    std::string audience_;
    std::chrono::milliseconds clock_skew_;
    std::size_t max_token_bytes_;
    std::size_t max_grants_;
};

}  // namespace outboxd::auth
