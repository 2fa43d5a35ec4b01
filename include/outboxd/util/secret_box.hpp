#pragma once

// Values kept secret at rest (README, "Secrets at rest"): AES-256-GCM through OpenSSL's EVP
// interface, under keys named by an id so that they can be rotated.
//
// Keys (OUTBOXD_SECRETS_KEY): a comma-separated list of "<key id>:<base64 of 32 bytes>". The
// first key seals; every key listed opens what names it. A sealed value is text,
//   enc:v1:<key id>:<base64 of nonce (12 bytes) | ciphertext | tag (16 bytes)>
// with a random nonce per value and a context (what the value belongs to, e.g. a target's
// name and field) authenticated with it, so that a sealed value opens only in its place.
//
// Thread-safe: immutable once made. Nothing here logs, and no message quotes key material.

#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace outboxd::util {

inline constexpr std::size_t kSecretKeyBytes = 32;       // AES-256
inline constexpr std::size_t kMaxSecretKeyIdBytes = 64;  // [A-Za-z0-9._-]
// What every sealed value starts with, whatever its version: a stored value that does not
// is in clear.
inline constexpr std::string_view kSealedPrefix = "enc:";

// What open() made of a stored value.
struct Opened {
    std::string text;     // the plain text, when `problem` is empty
    std::string problem;  // why it cannot be opened

    [[nodiscard]] bool ok() const { return problem.empty(); }
};

class SecretBox {
public:
    // Why `keys` is not a valid key list, or nothing. Names entries by position and key id,
    // never by their key text.
    [[nodiscard]] static std::optional<std::string> keys_problem(std::string_view keys);
    // The box of a valid list. Throws std::invalid_argument (keys_problem's message) otherwise.
    [[nodiscard]] static SecretBox parse(std::string_view keys);

    // Whether `stored` is a sealed value (of any version), rather than clear text.
    [[nodiscard]] static bool is_sealed(std::string_view stored) noexcept;
    // The key id a sealed value of version 1 names; empty for anything else.
    [[nodiscard]] static std::string_view key_id_of(std::string_view stored) noexcept;

    // `plain` sealed under the first key, bound to `context`. Throws std::runtime_error when
    // OpenSSL fails (e.g. no randomness for the nonce).
    [[nodiscard]] std::string seal(std::string_view plain, std::string_view context) const;
    // The plain text of a sealed value, or why it cannot be had: an unknown version or key
    // id, a malformed value, or one that fails authentication (altered, sealed for another
    // context, or under another key of the same id). Never throws for bad input.
    [[nodiscard]] Opened open(std::string_view sealed, std::string_view context) const;

    [[nodiscard]] const std::string& sealing_key_id() const { return keys_.front().id; }
    [[nodiscard]] bool holds(std::string_view key_id) const;

private:
    struct Key {
        Key() = default;
        Key(const Key&) = default;
        Key(Key&&) = default;
        Key& operator=(const Key&) = default;
        Key& operator=(Key&&) = default;
        ~Key();  // wipes the bytes

        std::string id;
        std::array<unsigned char, kSecretKeyBytes> bytes{};
    };
    explicit SecretBox(std::vector<Key> keys) : keys_(std::move(keys)) {}
    [[nodiscard]] const Key* find(std::string_view key_id) const;

    std::vector<Key> keys_;  // never empty; the first seals
};

}  // namespace outboxd::util
