#include "outboxd/auth/authenticator.hpp"

#include <array>
#include <cstdio>
#include <stdexcept>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

namespace outboxd::auth {
namespace {

std::array<unsigned char, 32> random_bytes() {
    std::array<unsigned char, 32> bytes{};
    if (RAND_bytes(bytes.data(), static_cast<int>(bytes.size())) != 1) {
        throw std::runtime_error{"the system's random source failed"};
    }
    return bytes;
}

std::string base64url(const unsigned char* data, std::size_t size) {
    std::string text(4 * ((size + 2) / 3), '\0');
    const int written = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(text.data()), data,
                                        static_cast<int>(size));
    text.resize(static_cast<std::size_t>(written));
    while (!text.empty() && text.back() == '=') text.pop_back();
    for (auto& c : text) {
        if (c == '+') c = '-';
        if (c == '/') c = '_';
    }
    return text;
}

std::shared_ptr<const Grant> everywhere(std::string id, Role role) {
    Grant grant;
    grant.credential_id = std::move(id);
    RoleSet roles;
    roles.add(role);
    grant.scopes.push_back({std::string{kAllNamespaces}, roles});
    return std::make_shared<const Grant>(std::move(grant));
}

}  // namespace

std::string sha256_hex(std::string_view text) {
    std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
    unsigned int length = 0;
    if (EVP_Digest(text.data(), text.size(), digest.data(), &length, EVP_sha256(), nullptr) != 1) {
        throw std::runtime_error{"SHA-256 failed"};
    }
    std::string hex(static_cast<std::size_t>(length) * 2, '0');
    constexpr std::string_view kDigits = "0123456789abcdef";
    for (std::size_t i = 0; i < length; ++i) {
        hex[2 * i] = kDigits[digest[i] >> 4U];
        hex[2 * i + 1] = kDigits[digest[i] & 0xFU];
    }
    return hex;
}

NewSecret new_secret() {
    const auto bytes = random_bytes();
    NewSecret made;
    made.secret = "obx_" + base64url(bytes.data(), bytes.size());
    made.sha256 = sha256_hex(made.secret);
    return made;
}

std::string new_credential_id() {
    const auto bytes = random_bytes();
    std::array<char, 17> hex{};
    for (std::size_t i = 0; i < 8; ++i) {
        std::snprintf(&hex[2 * i], 3, "%02x", static_cast<unsigned>(bytes[i]));
    }
    return "cred_" + std::string{hex.data(), 16};
}

Grant grant_of(const store::CredentialRecord& credential) {
    Grant grant;
    grant.credential_id = credential.id;
    std::vector<Role> roles;
    for (const auto& name : credential.roles) {
        if (const auto role = parse_role(name)) roles.push_back(*role);
    }
    grant.scopes = scopes_of(credential.namespaces, roles);
    if (credential.expires_at) {
        grant.expires_at = std::chrono::time_point_cast<std::chrono::system_clock::duration>(
            *credential.expires_at);
    }
    if (credential.nodes) grant.nodes = *credential.nodes;
    return grant;
}

Authenticator::Authenticator(BootstrapTokens tokens, std::shared_ptr<const BearerVerifier> jwt,
                             Clock clock)
    : tokens_(std::move(tokens)),
      jwt_(std::move(jwt)),
      clock_(std::move(clock)),
      admin_grant_(everywhere("bootstrap:admin", Role::admin)),
      worker_grant_(everywhere("bootstrap:worker", Role::worker)),
      open_api_(everywhere("anonymous", Role::admin)),
      open_workers_(everywhere("anonymous", Role::worker)) {
    if (tokens_.admin) admin_hash_ = sha256_hex(*tokens_.admin);
    if (tokens_.worker) worker_hash_ = sha256_hex(*tokens_.worker);
}

bool Authenticator::guarded() const {
    // Until the managed credentials were read, one may exist: guarded meanwhile.
    return tokens_.admin || tokens_.worker || jwt_ || !loaded_ || !by_hash_.empty();
}

std::shared_ptr<const Grant> Authenticator::anonymous(Area area) const {
    if (jwt_ || !loaded_ || !by_hash_.empty()) return nullptr;
    if (area == Area::api && !tokens_.admin) return open_api_;
    // With no worker token, what a worker may do is open, on the API too (GET /v1/cluster).
    if (!tokens_.worker) return open_workers_;
    return nullptr;
}

Authenticator::Result Authenticator::authenticate(const std::optional<std::string>& bearer,
                                                  Area area) const {
    if (!bearer || bearer->empty()) {
        if (auto grant = anonymous(area)) return grant;
        return std::string{"a valid bearer token is required"};
    }
    // Digests, compared in constant time: neither the content nor the length of a token
    // leaks through how long a refusal takes.
    const auto hash = sha256_hex(*bearer);
    const auto same = [&hash](const std::string& expected) {
        return !expected.empty() && CRYPTO_memcmp(hash.data(), expected.data(), hash.size()) == 0;
    };
    if (same(admin_hash_)) return admin_grant_;
    if (same(worker_hash_)) return worker_grant_;
    if (jwt_ && jwt_->takes(*bearer)) {
        auto verified = jwt_->verify(*bearer, now());
        if (auto* why = std::get_if<std::string>(&verified)) return "JWT refused: " + *why;
        return std::make_shared<const Grant>(std::get<Grant>(std::move(verified)));
    }
    const auto found = by_hash_.find(hash);
    if (found == by_hash_.end()) return std::string{"the bearer token is not a known credential"};
    if (found->second->expired(now()))
        return std::string{"the bearer token's credential has expired"};
    return found->second;
}

bool Authenticator::still_valid(const Grant& grant) const {
    if (grant.expired(now())) return false;
    if (grant.credential_id.starts_with("cred_")) return by_id_.contains(grant.credential_id);
    return true;
}

void Authenticator::replace_managed(const std::vector<store::CredentialRecord>& credentials,
                                    std::chrono::system_clock::time_point database_now) {
    clock_offset_ = database_now - clock_();
    by_hash_.clear();
    by_id_.clear();
    for (const auto& credential : credentials) add_managed(credential);
    loaded_ = true;
}

void Authenticator::add_managed(const store::CredentialRecord& credential) {
    by_hash_[credential.secret_sha256] = std::make_shared<const Grant>(grant_of(credential));
    by_id_[credential.id] = credential.secret_sha256;
}

void Authenticator::remove_managed(const std::string& id) {
    const auto found = by_id_.find(id);
    if (found == by_id_.end()) return;
    by_hash_.erase(found->second);
    by_id_.erase(found);
}

}  // namespace outboxd::auth
