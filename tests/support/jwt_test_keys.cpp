#include "jwt_test_keys.hpp"

#include <algorithm>
#include <stdexcept>
#include <vector>

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/ec.h>
#include <openssl/pem.h>

namespace outboxd::auth::test {
namespace {

constexpr std::size_t kP256CoordinateBytes = 32;

struct BioFree {
    void operator()(BIO* bio) const noexcept { BIO_free(bio); }
};
struct BnFree {
    void operator()(BIGNUM* bn) const noexcept { BN_free(bn); }
};
struct MdCtxFree {
    void operator()(EVP_MD_CTX* ctx) const noexcept { EVP_MD_CTX_free(ctx); }
};
struct EcdsaSigFree {
    void operator()(ECDSA_SIG* sig) const noexcept { ECDSA_SIG_free(sig); }
};

Pkey checked(EVP_PKEY* key, const char* what) {
    if (key == nullptr) throw std::runtime_error(std::string{"cannot generate "} + what);
    return Pkey{key};
}

std::string bytes_of(const BIGNUM* bn, std::size_t width = 0) {
    std::string bytes(std::max<std::size_t>(static_cast<std::size_t>(BN_num_bytes(bn)), width),
                      '\0');
    BN_bn2binpad(bn, reinterpret_cast<unsigned char*>(bytes.data()),
                 static_cast<int>(bytes.size()));
    return bytes;
}

std::string bn_param(const EVP_PKEY* key, const char* name, std::size_t width = 0) {
    BIGNUM* raw = nullptr;
    if (EVP_PKEY_get_bn_param(key, name, &raw) != 1) throw std::runtime_error(name);
    const std::unique_ptr<BIGNUM, BnFree> bn{raw};
    return bytes_of(bn.get(), width);
}

std::string bio_text(BIO* bio) {
    char* data = nullptr;
    const long length = BIO_get_mem_data(bio, &data);
    return {data, static_cast<std::size_t>(length)};
}

std::string sign(const EVP_PKEY* key, bool ecdsa, std::string_view input) {
    const std::unique_ptr<EVP_MD_CTX, MdCtxFree> ctx{EVP_MD_CTX_new()};
    if (EVP_DigestSignInit(ctx.get(), nullptr, EVP_sha256(), nullptr, const_cast<EVP_PKEY*>(key)) !=
        1) {
        throw std::runtime_error("EVP_DigestSignInit");
    }
    const auto* data = reinterpret_cast<const unsigned char*>(input.data());
    std::size_t length = 0;
    EVP_DigestSign(ctx.get(), nullptr, &length, data, input.size());
    std::vector<unsigned char> der(length);
    if (EVP_DigestSign(ctx.get(), der.data(), &length, data, input.size()) != 1) {
        throw std::runtime_error("EVP_DigestSign");
    }
    der.resize(length);
    if (!ecdsa) return {der.begin(), der.end()};
    // OpenSSL writes ECDSA signatures in DER; JWS wants R and S side by side.
    const unsigned char* cursor = der.data();
    const std::unique_ptr<ECDSA_SIG, EcdsaSigFree> sig{
        d2i_ECDSA_SIG(nullptr, &cursor, static_cast<long>(der.size()))};
    const BIGNUM* r = nullptr;
    const BIGNUM* s = nullptr;
    ECDSA_SIG_get0(sig.get(), &r, &s);
    return bytes_of(r, kP256CoordinateBytes) + bytes_of(s, kP256CoordinateBytes);
}

std::string signing_input(const nlohmann::json& header, const nlohmann::json& payload) {
    return base64url(header.dump()) + "." + base64url(payload.dump());
}

}  // namespace

const TestKeys& test_keys() {
    static const TestKeys keys{
        checked(EVP_PKEY_Q_keygen(nullptr, nullptr, "RSA", std::size_t{2048}), "RSA 2048"),
        checked(EVP_PKEY_Q_keygen(nullptr, nullptr, "EC", "P-256"), "P-256"),
        checked(EVP_PKEY_Q_keygen(nullptr, nullptr, "EC", "P-256"), "P-256"),
        checked(EVP_PKEY_Q_keygen(nullptr, nullptr, "RSA", std::size_t{1024}), "RSA 1024"),
        checked(EVP_PKEY_Q_keygen(nullptr, nullptr, "EC", "P-384"), "P-384"),
        checked(EVP_PKEY_Q_keygen(nullptr, nullptr, "ED25519"), "Ed25519"),
    };
    return keys;
}

std::string base64url(std::string_view bytes) {
    std::string text(4 * ((bytes.size() + 2) / 3) + 1, '\0');
    const int length = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(text.data()),
                                       reinterpret_cast<const unsigned char*>(bytes.data()),
                                       static_cast<int>(bytes.size()));
    text.resize(static_cast<std::size_t>(length));
    while (!text.empty() && text.back() == '=') text.pop_back();
    for (char& c : text) {
        if (c == '+') c = '-';
        if (c == '/') c = '_';
    }
    return text;
}

std::string public_pem(const EVP_PKEY* key) {
    const std::unique_ptr<BIO, BioFree> bio{BIO_new(BIO_s_mem())};
    PEM_write_bio_PUBKEY(bio.get(), key);
    return bio_text(bio.get());
}

std::string private_pem(const EVP_PKEY* key) {
    const std::unique_ptr<BIO, BioFree> bio{BIO_new(BIO_s_mem())};
    PEM_write_bio_PrivateKey(bio.get(), key, nullptr, nullptr, 0, nullptr, nullptr);
    return bio_text(bio.get());
}

nlohmann::json public_jwk(const EVP_PKEY* key, std::optional<std::string> kid) {
    nlohmann::json jwk;
    if (EVP_PKEY_get_base_id(key) == EVP_PKEY_RSA) {
        jwk = {{"kty", "RSA"},
               {"n", base64url(bn_param(key, OSSL_PKEY_PARAM_RSA_N))},
               {"e", base64url(bn_param(key, OSSL_PKEY_PARAM_RSA_E))}};
    } else {
        jwk = {{"kty", "EC"},
               {"crv", "P-256"},
               {"x", base64url(bn_param(key, OSSL_PKEY_PARAM_EC_PUB_X, kP256CoordinateBytes))},
               {"y", base64url(bn_param(key, OSSL_PKEY_PARAM_EC_PUB_Y, kP256CoordinateBytes))}};
    }
    if (kid) jwk["kid"] = *kid;
    return jwk;
}

std::string signed_token(const EVP_PKEY* key, const nlohmann::json& header,
                         const nlohmann::json& payload) {
    const auto input = signing_input(header, payload);
    return input + "." + base64url(sign(key, header.at("alg") == "ES256", input));
}

std::string hs256_token(std::string_view secret, const nlohmann::json& header,
                        const nlohmann::json& payload) {
    const auto input = signing_input(header, payload);
    std::string mac(EVP_MAX_MD_SIZE, '\0');
    std::size_t length = 0;
    if (EVP_Q_mac(nullptr, "HMAC", nullptr, "SHA256", nullptr, secret.data(), secret.size(),
                  reinterpret_cast<const unsigned char*>(input.data()), input.size(),
                  reinterpret_cast<unsigned char*>(mac.data()), mac.size(), &length) == nullptr) {
        throw std::runtime_error("EVP_Q_mac");
    }
    mac.resize(length);
    return input + "." + base64url(mac);
}

}  // namespace outboxd::auth::test
