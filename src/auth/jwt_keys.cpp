#include "jwt_keys.hpp"

#include <algorithm>
#include <array>
#include <cstddef>
#include <memory>

#include <nlohmann/json.hpp>
#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include "quoted_text.hpp"

namespace outboxd::auth {

std::string_view algorithm_name(JwtAlgorithm algorithm) noexcept {
    return algorithm == JwtAlgorithm::rs256 ? "RS256" : "ES256";
}

namespace {

// A P-256 coordinate, in bytes.
constexpr std::size_t kP256CoordinateBytes = 32;

struct BioFree {
    void operator()(BIO* bio) const noexcept { BIO_free(bio); }
};
struct PkeyFree {
    void operator()(EVP_PKEY* key) const noexcept { EVP_PKEY_free(key); }
};
struct BnFree {
    void operator()(BIGNUM* bn) const noexcept { BN_free(bn); }
};
using BnPtr = std::unique_ptr<BIGNUM, BnFree>;

using KeyOrError = std::variant<JwtKey, std::string>;

// OpenSSL's reason for the last failure on this thread ("OpenSSL DECODER routines:
// unsupported"), or `otherwise` when it gave none; and an empty queue after it.
std::string openssl_error(std::string_view otherwise = "no reason given") {
    const unsigned long code = ERR_peek_last_error();
    ERR_clear_error();
    const char* library = ERR_lib_error_string(code);
    const char* reason = ERR_reason_error_string(code);
    if (reason == nullptr) return std::string{otherwise};
    return "OpenSSL " + std::string{library != nullptr ? library : "?"} + ": " + reason;
}

std::vector<std::uint8_t> big_endian(const BIGNUM* bn, std::size_t width = 0) {
    const auto size = static_cast<std::size_t>(BN_num_bytes(bn));
    std::vector<std::uint8_t> bytes(std::max(size, width));
    BN_bn2binpad(bn, bytes.data(), static_cast<int>(bytes.size()));
    return bytes;
}

BnPtr bn_param(const EVP_PKEY* key, const char* name) {
    BIGNUM* bn = nullptr;
    if (EVP_PKEY_get_bn_param(key, name, &bn) != 1) return nullptr;
    return BnPtr{bn};
}

// cjose has no PEM import: the key's public numbers go through its keyspec constructors.
KeyOrError rsa_from_pkey(const EVP_PKEY* key, std::string label) {
    if (EVP_PKEY_get_bits(key) < kMinRsaBits) {
        return label + " is an RSA key of " + std::to_string(EVP_PKEY_get_bits(key)) +
               " bits; at least " + std::to_string(kMinRsaBits) + " are required";
    }
    const auto n = bn_param(key, OSSL_PKEY_PARAM_RSA_N);
    const auto e = bn_param(key, OSSL_PKEY_PARAM_RSA_E);
    if (!n || !e) return label + ": cannot read the RSA key's numbers: " + openssl_error();
    auto n_bytes = big_endian(n.get());
    auto e_bytes = big_endian(e.get());
    cjose_jwk_rsa_keyspec spec{};
    spec.n = n_bytes.data();
    spec.nlen = n_bytes.size();
    spec.e = e_bytes.data();
    spec.elen = e_bytes.size();
    JwkPtr jwk{cjose_jwk_create_RSA_spec(&spec, nullptr)};
    if (!jwk) return label + ": cjose refused the RSA key: " + openssl_error();
    return JwtKey{std::move(jwk), JwtAlgorithm::rs256, std::nullopt, std::move(label)};
}

KeyOrError ec_from_pkey(const EVP_PKEY* key, std::string label) {
    std::array<char, 64> group{};
    std::size_t group_length = 0;
    if (EVP_PKEY_get_utf8_string_param(key, OSSL_PKEY_PARAM_GROUP_NAME, group.data(), group.size(),
                                       &group_length) != 1) {
        return label + ": an EC key without a named curve (only P-256 is supported)";
    }
    const std::string_view curve{group.data(), group_length};
    if (curve != SN_X9_62_prime256v1) {
        return label + " is an EC key on curve " + in_quotes(curve) + "; only P-256 is supported";
    }
    const auto x = bn_param(key, OSSL_PKEY_PARAM_EC_PUB_X);
    const auto y = bn_param(key, OSSL_PKEY_PARAM_EC_PUB_Y);
    if (!x || !y) return label + ": cannot read the EC key's point: " + openssl_error();
    auto x_bytes = big_endian(x.get(), kP256CoordinateBytes);
    auto y_bytes = big_endian(y.get(), kP256CoordinateBytes);
    cjose_jwk_ec_keyspec spec{};
    spec.crv = CJOSE_JWK_EC_P_256;
    spec.x = x_bytes.data();
    spec.xlen = x_bytes.size();
    spec.y = y_bytes.data();
    spec.ylen = y_bytes.size();
    JwkPtr jwk{cjose_jwk_create_EC_spec(&spec, nullptr)};
    if (!jwk) return label + ": cjose refused the EC key: " + openssl_error();
    return JwtKey{std::move(jwk), JwtAlgorithm::es256, std::nullopt, std::move(label)};
}

KeyOrError key_from_pem_block(std::string_view block, std::string label) {
    const std::unique_ptr<BIO, BioFree> bio{
        BIO_new_mem_buf(block.data(), static_cast<int>(block.size()))};
    if (!bio) return label + ": " + openssl_error();
    const std::unique_ptr<EVP_PKEY, PkeyFree> key{
        PEM_read_bio_PUBKEY(bio.get(), nullptr, nullptr, nullptr)};
    if (!key) return label + " does not parse: " + openssl_error();
    switch (EVP_PKEY_get_base_id(key.get())) {
        case EVP_PKEY_RSA:
            return rsa_from_pkey(key.get(), std::move(label));
        case EVP_PKEY_EC:
            return ec_from_pkey(key.get(), std::move(label));
        default:
            const char* type = EVP_PKEY_get0_type_name(key.get());
            return label + " has an unsupported key type " +
                   in_quotes(type != nullptr ? type : "unknown") + " (RSA or EC P-256 only)";
    }
}

// Why a PEM block of this label is not a public key we take; empty when it is one.
std::string pem_label_problem(std::string_view label) {
    if (label == "PUBLIC KEY") return {};
    if (label.find("PRIVATE KEY") != std::string_view::npos) {
        return "holds a private key; the keys file takes public keys only";
    }
    if (label == "RSA PUBLIC KEY") {
        return "is a PKCS#1 'RSA PUBLIC KEY'; convert it to 'PUBLIC KEY' "
               "(openssl rsa -RSAPublicKey_in -pubout)";
    }
    if (label == "CERTIFICATE") {
        return "is a certificate; give its public key (openssl x509 -pubkey -noout)";
    }
    return "is a " + in_quotes(label) + " block, not a 'PUBLIC KEY'";
}

std::variant<JwtKeySet, std::string> load_pem(std::string_view text) {
    constexpr std::string_view kBegin = "-----BEGIN ";
    constexpr std::string_view kDashes = "-----";
    JwtKeySet set;
    std::size_t at = text.find(kBegin);
    if (at == std::string_view::npos) {
        return std::string{"the keys text holds neither a PEM 'PUBLIC KEY' nor a JWKS document"};
    }
    while (at != std::string_view::npos) {
        std::string label = "PEM key " + std::to_string(set.keys.size() + 1);
        const std::size_t label_at = at + kBegin.size();
        const std::size_t label_end = text.find(kDashes, label_at);
        if (label_end == std::string_view::npos) return label + " has a broken BEGIN line";
        const auto pem_label = text.substr(label_at, label_end - label_at);
        if (auto problem = pem_label_problem(pem_label); !problem.empty()) {
            return label.append(" ").append(problem);
        }
        const std::string end_line = "-----END " + std::string{pem_label} + "-----";
        const std::size_t end = text.find(end_line, label_end);
        if (end == std::string_view::npos) return label + " has no END line";
        auto key = key_from_pem_block(text.substr(at, end + end_line.size() - at), label);
        if (auto* problem = std::get_if<std::string>(&key)) return std::move(*problem);
        set.keys.push_back(std::get<JwtKey>(std::move(key)));
        at = text.find(kBegin, end + end_line.size());
    }
    return set;
}

std::optional<std::string> string_member(const nlohmann::json& object, const char* name) {
    const auto it = object.find(name);
    if (it == object.end() || !it->is_string()) return std::nullopt;
    return it->get<std::string>();
}

// Why a JWKS key is passed over (it says it is not for signatures of ours), or empty.
std::string jwk_pass_over_reason(const nlohmann::json& jwk) {
    if (const auto use = string_member(jwk, "use"); use && *use != "sig") {
        return "use " + in_quotes(*use);
    }
    if (const auto alg = string_member(jwk, "alg"); alg &&
                                                    *alg != algorithm_name(JwtAlgorithm::rs256) &&
                                                    *alg != algorithm_name(JwtAlgorithm::es256)) {
        return "alg " + in_quotes(*alg);
    }
    return {};
}

KeyOrError key_from_jwk(const nlohmann::json& jwk, std::string label) {
    const auto kty = string_member(jwk, "kty").value_or("");
    const auto alg = string_member(jwk, "alg");
    JwtAlgorithm algorithm = JwtAlgorithm::rs256;
    if (kty == "RSA") {
        algorithm = JwtAlgorithm::rs256;
    } else if (kty == "EC") {
        algorithm = JwtAlgorithm::es256;
        const auto crv = string_member(jwk, "crv").value_or("");
        if (crv != "P-256") {
            return label + " is an EC key on curve " + in_quotes(crv) + "; only P-256 is supported";
        }
    } else {
        return label + " has an unsupported kty " + in_quotes(kty) + " (RSA or EC P-256 only)";
    }
    if (alg && *alg != algorithm_name(algorithm)) {
        return label + " is an " + kty + " key marked alg " + in_quotes(*alg);
    }
    // cjose would import the private parts too, and then the key file is a secret.
    for (const char* secret : {"d", "p", "q", "dp", "dq", "qi", "oth"}) {
        if (jwk.contains(secret)) return label + " holds private key material ('" + secret + "')";
    }
    const std::string json = jwk.dump();
    JwkPtr imported{cjose_jwk_import(json.data(), json.size(), nullptr)};
    if (!imported) {
        return label + " does not import: " + openssl_error("a member is missing or malformed");
    }
    const auto imported_kty = cjose_jwk_get_kty(imported.get(), nullptr);
    if ((algorithm == JwtAlgorithm::rs256) != (imported_kty == CJOSE_JWK_KTY_RSA)) {
        return label + " imported as another key type";
    }
    if (algorithm == JwtAlgorithm::rs256) {
        const auto bits = cjose_jwk_get_keysize(imported.get(), nullptr);
        if (bits < static_cast<std::size_t>(kMinRsaBits)) {
            return label + " is an RSA key of " + std::to_string(bits) + " bits; at least " +
                   std::to_string(kMinRsaBits) + " are required";
        }
    }
    return JwtKey{std::move(imported), algorithm, string_member(jwk, "kid"), std::move(label)};
}

std::variant<JwtKeySet, std::string> load_jwks(std::string_view text) {
    const auto doc = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (doc.is_discarded()) return std::string{"the JWKS document is not valid JSON"};
    if (!doc.is_object() || !doc.contains("keys") || !doc["keys"].is_array()) {
        return std::string{"the JWKS document has no \"keys\" array"};
    }
    JwtKeySet set;
    std::string passed_over;
    const auto& keys = doc["keys"];
    for (std::size_t i = 0; i < keys.size(); ++i) {
        const auto& jwk = keys[i];
        std::string label = "JWKS key " + std::to_string(i);
        if (!jwk.is_object()) return label + " is not a JSON object";
        if (const auto kid = string_member(jwk, "kid")) label += " (kid " + in_quotes(*kid) + ")";
        if (auto reason = jwk_pass_over_reason(jwk); !reason.empty()) {
            passed_over.append(passed_over.empty() ? "" : ", ").append(label).append(": ");
            passed_over.append(reason);
            continue;
        }
        auto key = key_from_jwk(jwk, label);
        if (auto* problem = std::get_if<std::string>(&key)) return std::move(*problem);
        set.keys.push_back(std::get<JwtKey>(std::move(key)));
    }
    if (set.keys.empty()) {
        return "the JWKS document has no RS256 or ES256 signing key" +
               (passed_over.empty() ? std::string{} : " (passed over " + passed_over + ")");
    }
    return set;
}

}  // namespace

std::variant<JwtKeySet, std::string> load_jwt_keys(std::string_view text) {
    const auto first = text.find_first_not_of(" \t\r\n");
    if (first == std::string_view::npos) return std::string{"the keys text is empty"};
    return text[first] == '{' ? load_jwks(text) : load_pem(text);
}

}  // namespace outboxd::auth
