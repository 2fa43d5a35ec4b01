#pragma once

// The public keys a JwtVerifier checks signatures with, read from the text of
// OUTBOXD_JWT_KEYS_FILE. Internal to src/auth.

#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "crypto_handles.hpp"

namespace outboxd::auth {

// The only two algorithms accepted, each tied to its key type.
enum class JwtAlgorithm { rs256, es256 };

[[nodiscard]] std::string_view algorithm_name(JwtAlgorithm algorithm) noexcept;

// The smallest RSA modulus accepted (RFC 7518 §3.3 requires 2048 bits for RS256).
inline constexpr int kMinRsaBits = 2048;

struct JwtKey {
    JwkPtr jwk;                                    // RSA for RS256, EC P-256 for ES256
    JwtAlgorithm algorithm = JwtAlgorithm::rs256;  // the one algorithm it verifies
    std::optional<std::string> kid;                // a JWKS key's id; PEM keys have none
    std::string label;  // "PEM key 2", "JWKS key 0 (kid 'k1')": for messages
};

struct JwtKeySet {
    std::vector<JwtKey> keys;
};

// The keys in `text`: PEM public keys (every block must be a usable "PUBLIC KEY"), or a JWKS
// document (keys marked for encryption or for another alg are passed over; any other key
// must be usable). Or why there is no usable key, naming the key at fault.
[[nodiscard]] std::variant<JwtKeySet, std::string> load_jwt_keys(std::string_view text);

}  // namespace outboxd::auth
