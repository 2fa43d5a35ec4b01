#pragma once

// Keys and tokens for the JWT verifier's tests, made with OpenSSL alone (so that the
// verifier's cjose path is checked against an independent signer). Keys are generated once
// per test run.

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>
#include <openssl/evp.h>

namespace outboxd::auth::test {

struct PkeyFree {
    void operator()(EVP_PKEY* key) const noexcept { EVP_PKEY_free(key); }
};
using Pkey = std::unique_ptr<EVP_PKEY, PkeyFree>;

struct TestKeys {
    Pkey rsa;        // RSA 2048: the RS256 key
    Pkey ec;         // EC P-256: the ES256 key
    Pkey other_ec;   // another P-256 key, never configured unless a test says so
    Pkey small_rsa;  // RSA 1024: too small to load; signs an RS256 token of another key
    Pkey p384;       // EC P-384: an unsupported curve
    Pkey ed25519;    // an unsupported key type
};

// The run's keys, generated on first use.
[[nodiscard]] const TestKeys& test_keys();

[[nodiscard]] std::string base64url(std::string_view bytes);
[[nodiscard]] std::string public_pem(const EVP_PKEY* key);
[[nodiscard]] std::string private_pem(const EVP_PKEY* key);

// The key as a public JWK ({"kty":"RSA","n","e"} or {"kty":"EC","crv":"P-256","x","y"}).
[[nodiscard]] nlohmann::json public_jwk(const EVP_PKEY* key,
                                        std::optional<std::string> kid = std::nullopt);

// A compact JWS of `header` and `payload` signed with `key` as the header's alg says
// (RS256 or ES256; signature bytes as JWS wants them, R||S for ES256).
[[nodiscard]] std::string signed_token(const EVP_PKEY* key, const nlohmann::json& header,
                                       const nlohmann::json& payload);

// HS256 over the token's signing input with `secret` as the HMAC key.
[[nodiscard]] std::string hs256_token(std::string_view secret, const nlohmann::json& header,
                                      const nlohmann::json& payload);

}  // namespace outboxd::auth::test
