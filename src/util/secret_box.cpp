#include "outboxd/util/secret_box.hpp"

#include <algorithm>
#include <memory>
#include <stdexcept>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

namespace outboxd::util {
namespace {

constexpr std::string_view kVersion1 = "enc:v1:";
constexpr std::size_t kNonceBytes = 12;  // GCM's native IV size: no GHASH of the IV
constexpr std::size_t kTagBytes = 16;

using CipherContext = std::unique_ptr<EVP_CIPHER_CTX, decltype(&EVP_CIPHER_CTX_free)>;

CipherContext new_context() {
    CipherContext context{EVP_CIPHER_CTX_new(), &EVP_CIPHER_CTX_free};
    if (!context) throw std::runtime_error("OpenSSL cannot allocate a cipher context");
    return context;
}

bool is_key_id_char(char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' ||
           c == '_' || c == '-';
}

bool is_key_id(std::string_view id) {
    return !id.empty() && id.size() <= kMaxSecretKeyIdBytes &&
           std::all_of(id.begin(), id.end(), is_key_id_char);
}

bool is_base64_char(char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '+' ||
           c == '/';
}

std::string_view trim(std::string_view text) {
    const auto first = text.find_first_not_of(" \t");
    if (first == std::string_view::npos) return {};
    return text.substr(first, text.find_last_not_of(" \t") - first + 1);
}

std::string base64(const unsigned char* data, std::size_t size) {
    std::string out(4 * ((size + 2) / 3), '\0');
    const int written =
        EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()), data, static_cast<int>(size));
    out.resize(static_cast<std::size_t>(std::max(written, 0)));
    return out;
}

// Standard base64 with padding, strictly: EVP_DecodeBlock alone skips spaces and keeps the
// padding's zero bytes.
std::optional<std::string> unbase64(std::string_view text) {
    if (text.empty() || text.size() % 4 != 0) return std::nullopt;
    const auto data_end = text.find_last_not_of('=');
    const std::size_t padding =
        data_end == std::string_view::npos ? text.size() : text.size() - data_end - 1;
    const auto data = text.substr(0, text.size() - padding);
    if (padding > 2 || !std::all_of(data.begin(), data.end(), is_base64_char)) return std::nullopt;
    std::string out(3 * (text.size() / 4), '\0');
    const int written = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                        reinterpret_cast<const unsigned char*>(text.data()),
                                        static_cast<int>(text.size()));
    if (written < 0 || static_cast<std::size_t>(written) != out.size()) return std::nullopt;
    out.resize(out.size() - padding);
    return out;
}

// Each comma-separated entry of `keys`, trimmed (empty ones too: they are mistakes).
std::vector<std::string_view> entries(std::string_view keys) {
    std::vector<std::string_view> out;
    std::size_t start = 0;
    while (true) {
        const auto comma = keys.find(',', start);
        out.push_back(
            trim(keys.substr(start, comma == std::string_view::npos ? keys.npos : comma - start)));
        if (comma == std::string_view::npos) return out;
        start = comma + 1;
    }
}

}  // namespace

std::optional<std::string> SecretBox::keys_problem(std::string_view keys) {
    try {
        (void)parse(keys);
    } catch (const std::invalid_argument& error) {
        return std::string{error.what()};
    }
    return std::nullopt;
}

SecretBox SecretBox::parse(std::string_view keys) {
    const auto fail = [](const std::string& why) { throw std::invalid_argument(why); };
    std::vector<Key> parsed;
    const auto listed = entries(keys);
    for (std::size_t i = 0; i < listed.size(); ++i) {
        const auto entry = listed[i];
        const auto position = "entry " + std::to_string(i + 1);
        const auto colon = entry.find(':');
        if (entry.empty() || colon == std::string_view::npos) {
            fail(position + " is not '<key id>:<base64 of 32 bytes>'");
        }
        const auto id = entry.substr(0, colon);
        if (!is_key_id(id)) {
            fail(position + ": a key id is 1 to " + std::to_string(kMaxSecretKeyIdBytes) +
                 " letters, digits, '.', '_' or '-'");
        }
        const auto named = position + " (key id '" + std::string{id} + "')";
        if (std::any_of(parsed.begin(), parsed.end(),
                        [&id](const Key& key) { return key.id == id; })) {
            fail(named + ": the key id is given twice");
        }
        auto bytes = unbase64(trim(entry.substr(colon + 1)));
        if (!bytes) fail(named + ": the key is not standard base64 (with '=' padding)");
        if (bytes->size() != kSecretKeyBytes) {
            const auto size = bytes->size();
            OPENSSL_cleanse(bytes->data(), bytes->size());
            fail(named + ": the key is " + std::to_string(size) + " bytes; AES-256 takes " +
                 std::to_string(kSecretKeyBytes));
        }
        auto& key = parsed.emplace_back();
        key.id = std::string{id};
        std::copy(bytes->begin(), bytes->end(), key.bytes.begin());
        OPENSSL_cleanse(bytes->data(), bytes->size());
    }
    return SecretBox{std::move(parsed)};
}

SecretBox::Key::~Key() { OPENSSL_cleanse(bytes.data(), bytes.size()); }

bool SecretBox::is_sealed(std::string_view stored) noexcept {
    return stored.starts_with(kSealedPrefix);
}

std::string_view SecretBox::key_id_of(std::string_view stored) noexcept {
    if (!stored.starts_with(kVersion1)) return {};
    const auto rest = stored.substr(kVersion1.size());
    const auto colon = rest.find(':');
    return colon == std::string_view::npos ? std::string_view{} : rest.substr(0, colon);
}

const SecretBox::Key* SecretBox::find(std::string_view key_id) const {
    const auto it = std::find_if(keys_.begin(), keys_.end(),
                                 [&key_id](const Key& key) { return key.id == key_id; });
    return it == keys_.end() ? nullptr : &*it;
}

bool SecretBox::holds(std::string_view key_id) const { return find(key_id) != nullptr; }

std::string SecretBox::seal(std::string_view plain, std::string_view context) const {
    const Key& key = keys_.front();
    std::string sealed(kNonceBytes + plain.size() + kTagBytes, '\0');
    auto* nonce = reinterpret_cast<unsigned char*>(sealed.data());
    auto* cipher_text = nonce + kNonceBytes;
    if (RAND_bytes(nonce, static_cast<int>(kNonceBytes)) != 1) {
        throw std::runtime_error("OpenSSL has no randomness for a nonce");
    }
    const auto context_box = new_context();
    auto* ctx = context_box.get();
    int length = 0;
    const bool sealed_ok =
        EVP_EncryptInit_ex(ctx, EVP_aes_256_gcm(), nullptr, key.bytes.data(), nonce) == 1 &&
        (context.empty() ||
         EVP_EncryptUpdate(ctx, nullptr, &length,
                           reinterpret_cast<const unsigned char*>(context.data()),
                           static_cast<int>(context.size())) == 1) &&
        (plain.empty() || (EVP_EncryptUpdate(ctx, cipher_text, &length,
                                             reinterpret_cast<const unsigned char*>(plain.data()),
                                             static_cast<int>(plain.size())) == 1 &&
                           static_cast<std::size_t>(length) == plain.size())) &&
        EVP_EncryptFinal_ex(ctx, cipher_text + plain.size(), &length) == 1 && length == 0 &&
        EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_GET_TAG, static_cast<int>(kTagBytes),
                            cipher_text + plain.size()) == 1;
    if (!sealed_ok) throw std::runtime_error("OpenSSL failed to encrypt a value");
    return std::string{kVersion1} + key.id + ":" +
           base64(reinterpret_cast<const unsigned char*>(sealed.data()), sealed.size());
}

Opened SecretBox::open(std::string_view sealed, std::string_view context) const {
    if (!sealed.starts_with(kVersion1)) {
        return {{},
                sealed.starts_with(kSealedPrefix)
                    ? "is encrypted in a format this version of outboxd does not know"
                    : "is not an encrypted value"};
    }
    const auto key_id = key_id_of(sealed);
    if (!is_key_id(key_id)) return {{}, "is not a well-formed encrypted value"};
    const Key* key = find(key_id);
    if (key == nullptr) {
        return {{},
                "was encrypted with key id '" + std::string{key_id} +
                    "', which is not among this node's keys"};
    }
    const auto bytes = unbase64(sealed.substr(kVersion1.size() + key_id.size() + 1));
    if (!bytes || bytes->size() < kNonceBytes + kTagBytes) {
        return {{}, "is not a well-formed encrypted value"};
    }
    const auto* nonce = reinterpret_cast<const unsigned char*>(bytes->data());
    const auto* cipher_text = nonce + kNonceBytes;
    const auto text_size = bytes->size() - kNonceBytes - kTagBytes;
    // The tag is set through a non-const pointer, though OpenSSL only reads it.
    std::array<unsigned char, kTagBytes> tag{};
    std::copy_n(cipher_text + text_size, kTagBytes, tag.begin());

    std::string plain(text_size, '\0');
    auto* out = reinterpret_cast<unsigned char*>(plain.data());
    const auto context_box = new_context();
    auto* ctx = context_box.get();
    int length = 0;
    const bool opened =
        EVP_DecryptInit_ex(ctx, EVP_aes_256_gcm(), nullptr, key->bytes.data(), nonce) == 1 &&
        (context.empty() ||
         EVP_DecryptUpdate(ctx, nullptr, &length,
                           reinterpret_cast<const unsigned char*>(context.data()),
                           static_cast<int>(context.size())) == 1) &&
        (text_size == 0 ||
         (EVP_DecryptUpdate(ctx, out, &length, cipher_text, static_cast<int>(text_size)) == 1 &&
          static_cast<std::size_t>(length) == text_size)) &&
        EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_TAG, static_cast<int>(kTagBytes), tag.data()) ==
            1 &&
        EVP_DecryptFinal_ex(ctx, out + text_size, &length) == 1;
    if (!opened) {
        OPENSSL_cleanse(plain.data(), plain.size());
        return {{},
                "does not decrypt with key id '" + std::string{key_id} +
                    "': altered, moved from another place, or sealed under another key "
                    "of that id"};
    }
    return {std::move(plain), {}};
}

}  // namespace outboxd::util
