#include "outboxd/auth/jwt_verifier.hpp"

#include <algorithm>
#include <optional>

#include <nlohmann/json.hpp>

#include "crypto_handles.hpp"
#include "jwt_claims.hpp"
#include "jwt_keys.hpp"
#include "outboxd/util/untrusted_text.hpp"
#include "quoted_text.hpp"

namespace outboxd::auth {
namespace {

using Json = nlohmann::json;

// An ES256 signature is R and S of 32 bytes each (RFC 7518 §3.4): 86 base64url characters.
// cjose splits whatever it is given in halves, so any other length is refused here.
constexpr std::size_t kEs256SignatureChars = 86;
// The deepest nesting a header or payload may have (identity providers nest claims two or
// three levels), checked in one pass before the parser sees the text.
constexpr std::size_t kMaxJsonDepth = 16;

JwtRefusal refuse(JwtRefusalReason reason, std::string message) {
    return JwtRefusal{reason, std::move(message)};
}

bool is_base64url(std::string_view part) {
    return std::all_of(part.begin(), part.end(), [](char c) {
        return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
               c == '-' || c == '_';
    });
}

struct CompactParts {
    std::string_view header;
    std::string_view payload;
    std::string_view signature;  // empty for an unsigned token
};

// The parts of a compact JWS, unpadded base64url only: cjose's decoder stops at the first
// '=' and would ignore whatever follows it.
std::optional<CompactParts> split_compact(std::string_view token) {
    const auto first = token.find('.');
    if (first == std::string_view::npos) return std::nullopt;
    const auto second = token.find('.', first + 1);
    if (second == std::string_view::npos) return std::nullopt;
    const CompactParts parts{token.substr(0, first), token.substr(first + 1, second - first - 1),
                             token.substr(second + 1)};
    if (parts.header.empty() || parts.payload.empty()) return std::nullopt;
    if (!is_base64url(parts.header) || !is_base64url(parts.payload) ||
        !is_base64url(parts.signature)) {
        return std::nullopt;
    }
    return parts;
}

std::optional<Json> json_object_of(std::string_view text) {
    if (util::json_nesting_depth(text, kMaxJsonDepth) > kMaxJsonDepth) return std::nullopt;
    auto json = Json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (json.is_discarded() || !json.is_object()) return std::nullopt;
    return json;
}

std::optional<Json> header_of(std::string_view part) {
    std::uint8_t* raw = nullptr;
    std::size_t length = 0;
    if (!cjose_base64url_decode(part.data(), part.size(), &raw, &length, nullptr)) {
        return std::nullopt;
    }
    const CjoseBytes bytes{raw};
    return json_object_of({reinterpret_cast<const char*>(bytes.get()), length});
}

// The alg is judged before cjose sees the token: cjose would happily run HS256 or parse
// `none`, and which key types an alg may use is ours to decide, not the token's.
std::variant<JwtAlgorithm, JwtRefusal> algorithm_of(const Json& header) {
    const auto alg = header.find("alg");
    if (alg == header.end() || !alg->is_string()) {
        return refuse(JwtRefusalReason::malformed, "token header has no 'alg'");
    }
    const auto& name = alg->get_ref<const std::string&>();
    if (name == algorithm_name(JwtAlgorithm::rs256)) return JwtAlgorithm::rs256;
    if (name == algorithm_name(JwtAlgorithm::es256)) return JwtAlgorithm::es256;
    if (name == "none") {
        return refuse(JwtRefusalReason::algorithm, "alg 'none' (an unsigned token) is refused");
    }
    if (name.starts_with("HS")) {
        return refuse(JwtRefusalReason::algorithm,
                      "alg " + in_quotes(name) +
                          " (a shared secret) is refused; only RS256 and ES256 are accepted");
    }
    return refuse(JwtRefusalReason::algorithm,
                  "alg " + in_quotes(name) + " is not accepted; only RS256 and ES256 are");
}

struct CheckedHeader {
    JwtAlgorithm algorithm = JwtAlgorithm::rs256;
    std::optional<std::string> kid;
};

// What the header asks for, when it is something this verifier does, and a signature of a
// length that alg can have.
std::variant<CheckedHeader, JwtRefusal> check_header(const CompactParts& parts) {
    const auto header = header_of(parts.header);
    if (!header) return refuse(JwtRefusalReason::malformed, "token header is not a JSON object");
    auto algorithm = algorithm_of(*header);
    if (auto* problem = std::get_if<JwtRefusal>(&algorithm)) return std::move(*problem);
    CheckedHeader checked{std::get<JwtAlgorithm>(algorithm), std::nullopt};
    // RFC 7515 §4.1.11: extensions marked critical must be understood, and none are.
    if (header->contains("crit")) {
        return refuse(JwtRefusalReason::malformed, "token header has 'crit' extensions");
    }
    if (const auto kid = header->find("kid"); kid != header->end()) {
        if (!kid->is_string()) return refuse(JwtRefusalReason::malformed, "'kid' is not a string");
        checked.kid = kid->get<std::string>();
    }
    if (parts.signature.empty()) return refuse(JwtRefusalReason::signature, "token is unsigned");
    if (checked.algorithm == JwtAlgorithm::es256 &&
        parts.signature.size() != kEs256SignatureChars) {
        return refuse(JwtRefusalReason::signature, "ES256 signature is not 64 bytes");
    }
    return checked;
}

// The keys to try: those of the token's alg, and of its kid when a key carries that kid;
// keys without an id (PEM keys) are tried for a kid no key carries.
std::vector<const JwtKey*> candidate_keys(const JwtKeySet& set, JwtAlgorithm algorithm,
                                          const std::optional<std::string>& kid) {
    const bool kid_known = kid && std::any_of(set.keys.begin(), set.keys.end(),
                                              [&](const JwtKey& key) { return key.kid == kid; });
    std::vector<const JwtKey*> keys;
    for (const auto& key : set.keys) {
        if (key.algorithm != algorithm) continue;
        if (kid_known ? key.kid == kid : (!kid || !key.kid)) keys.push_back(&key);
    }
    return keys;
}

}  // namespace

JwtVerifier::JwtVerifier(const JwtSettings& settings, std::shared_ptr<const JwtKeySet> keys)
    : keys_(std::move(keys)),
      issuer_(settings.issuer),
      audience_(settings.audience),
      clock_skew_(settings.clock_skew),
      max_token_bytes_(settings.max_token_bytes),
      max_grants_(settings.max_grants) {}

std::variant<JwtVerifier, std::string> JwtVerifier::load(const JwtSettings& settings) {
    const ClearOpensslErrors clear_errors;
    if (settings.clock_skew.count() < 0) return std::string{"the JWT clock skew is negative"};
    if (settings.max_token_bytes == 0) return std::string{"the JWT size limit is zero"};
    auto keys = load_jwt_keys(settings.keys_text);
    if (auto* problem = std::get_if<std::string>(&keys)) return std::move(*problem);
    return JwtVerifier{settings,
                       std::make_shared<const JwtKeySet>(std::get<JwtKeySet>(std::move(keys)))};
}

std::size_t JwtVerifier::key_count() const noexcept { return keys_->keys.size(); }

bool JwtVerifier::looks_like_jwt(std::string_view bearer) noexcept {
    const auto parts = split_compact(bearer);
    return parts && !parts->signature.empty();
}

std::variant<JwtClaims, JwtRefusal> JwtVerifier::verify(
    std::string_view token, std::chrono::system_clock::time_point now) const {
    const ClearOpensslErrors clear_errors;
    if (token.size() > max_token_bytes_) {
        return refuse(JwtRefusalReason::malformed, "token of " + std::to_string(token.size()) +
                                                       " bytes is longer than the limit of " +
                                                       std::to_string(max_token_bytes_));
    }
    const auto parts = split_compact(token);
    if (!parts) {
        return refuse(JwtRefusalReason::malformed,
                      "not a JWT: expected three base64url parts separated by dots");
    }
    auto checked = check_header(*parts);
    if (auto* problem = std::get_if<JwtRefusal>(&checked)) return std::move(*problem);
    const auto& [alg, kid] = std::get<CheckedHeader>(checked);

    const auto keys = candidate_keys(*keys_, alg, kid);
    if (keys.empty()) {
        return refuse(JwtRefusalReason::no_key, "no " + std::string{algorithm_name(alg)} + " key" +
                                                    (kid ? " with kid " + in_quotes(*kid) : "") +
                                                    " is configured");
    }
    const JwsPtr jws{cjose_jws_import(token.data(), token.size(), nullptr)};
    if (!jws) return refuse(JwtRefusalReason::malformed, "token does not parse");
    // Two JSON parsers read the header (duplicate members, for one, are a matter of taste):
    // the alg cjose will verify with must be the one judged above.
    const char* library_alg =
        cjose_header_get(cjose_jws_get_protected(jws.get()), CJOSE_HDR_ALG, nullptr);
    if (library_alg == nullptr || algorithm_name(alg) != library_alg) {
        return refuse(JwtRefusalReason::algorithm, "token header is ambiguous about its alg");
    }
    const bool verified = std::any_of(keys.begin(), keys.end(), [&](const JwtKey* key) {
        return cjose_jws_verify(jws.get(), key->jwk.get(), nullptr);
    });
    if (!verified) {
        return refuse(JwtRefusalReason::signature,
                      "signature does not verify with " +
                          (keys.size() == 1 ? keys.front()->label
                                            : "any of the " + std::to_string(keys.size()) + " " +
                                                  std::string{algorithm_name(alg)} + " keys"));
    }

    std::uint8_t* plaintext = nullptr;  // owned by the JWS
    std::size_t plaintext_length = 0;
    if (!cjose_jws_get_plaintext(jws.get(), &plaintext, &plaintext_length, nullptr)) {
        return refuse(JwtRefusalReason::malformed, "token has no payload");
    }
    const auto payload =
        json_object_of({reinterpret_cast<const char*>(plaintext), plaintext_length});
    if (!payload) return refuse(JwtRefusalReason::malformed, "token payload is not a JSON object");
    return check_claims(*payload, ClaimRules{issuer_, audience_, clock_skew_, max_grants_}, now);
}

}  // namespace outboxd::auth
