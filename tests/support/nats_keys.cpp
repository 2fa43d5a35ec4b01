#include "nats_keys.hpp"

#include <sys/stat.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <fstream>
#include <memory>
#include <stdexcept>

#include <nats/nats.h>
#include <nlohmann/json.hpp>
#include <openssl/evp.h>
#include <openssl/rand.h>

#include "jwt_test_keys.hpp"

namespace outboxd::test {
namespace {

using auth::test::base64url;
using nlohmann::json;

// NKey type prefixes: the first byte of a decoded key, 5 bits of type then 3 zero bits.
constexpr std::uint8_t kPrefixSeed = 18U << 3U;  // 'S'

std::uint8_t type_prefix(char type) {
    switch (type) {
        case 'U':
            return 20U << 3U;
        case 'A':
            return 0U;
        case 'O':
            return 14U << 3U;
        default:
            throw std::invalid_argument(std::string{"no NKey type '"} + type + "'");
    }
}

// CRC-16/XMODEM (polynomial 0x1021, initial 0), as NKeys checksum their bytes.
std::uint16_t crc16(const std::string& bytes) {
    std::uint16_t crc = 0;
    for (const unsigned char byte : bytes) {
        crc ^= static_cast<std::uint16_t>(byte << 8U);
        for (int bit = 0; bit < 8; ++bit) {
            crc = (crc & 0x8000U) != 0 ? static_cast<std::uint16_t>((crc << 1U) ^ 0x1021U)
                                       : static_cast<std::uint16_t>(crc << 1U);
        }
    }
    return crc;
}

// RFC 4648 base32, upper case, without padding.
std::string base32(const std::string& bytes) {
    static constexpr std::string_view kAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
    std::string out;
    std::uint32_t buffer = 0;
    int bits = 0;
    for (const unsigned char byte : bytes) {
        buffer = (buffer << 8U) | byte;
        bits += 8;
        while (bits >= 5) {
            out += kAlphabet[(buffer >> static_cast<unsigned>(bits - 5)) & 31U];
            bits -= 5;
        }
    }
    if (bits > 0) out += kAlphabet[(buffer << static_cast<unsigned>(5 - bits)) & 31U];
    return out;
}

// `raw` followed by its CRC-16, little end first, in base32.
std::string encode(std::string raw) {
    const auto crc = crc16(raw);
    raw += static_cast<char>(crc & 0xFFU);
    raw += static_cast<char>(crc >> 8U);
    return base32(raw);
}

struct PkeyFree {
    void operator()(EVP_PKEY* key) const noexcept { EVP_PKEY_free(key); }
};
struct MdCtxFree {
    void operator()(EVP_MD_CTX* ctx) const noexcept { EVP_MD_CTX_free(ctx); }
};
using Pkey = std::unique_ptr<EVP_PKEY, PkeyFree>;

struct RawKeyPair {
    std::string seed;  // 32 bytes: the Ed25519 private key
    std::string public_key;
};

Pkey private_key(const std::string& seed) {
    Pkey key{EVP_PKEY_new_raw_private_key(EVP_PKEY_ED25519, nullptr,
                                          reinterpret_cast<const unsigned char*>(seed.data()),
                                          seed.size())};
    if (!key) throw std::runtime_error("EVP_PKEY_new_raw_private_key failed");
    return key;
}

RawKeyPair raw_pair() {
    RawKeyPair pair;
    pair.seed.resize(32);
    if (RAND_bytes(reinterpret_cast<unsigned char*>(pair.seed.data()), 32) != 1) {
        throw std::runtime_error("RAND_bytes failed");
    }
    const auto key = private_key(pair.seed);
    std::size_t length = 32;
    pair.public_key.resize(length);
    if (EVP_PKEY_get_raw_public_key(
            key.get(), reinterpret_cast<unsigned char*>(pair.public_key.data()), &length) != 1) {
        throw std::runtime_error("EVP_PKEY_get_raw_public_key failed");
    }
    return pair;
}

// The 32 private bytes of an encoded seed (which make_nkey made: no checks beyond length).
std::string seed_bytes(const std::string& seed) {
    static constexpr std::string_view kAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
    std::string bytes;
    std::uint32_t buffer = 0;
    int bits = 0;
    for (const char c : seed) {
        buffer = (buffer << 5U) | static_cast<std::uint32_t>(kAlphabet.find(c));
        bits += 5;
        if (bits >= 8) {
            bytes += static_cast<char>((buffer >> static_cast<unsigned>(bits - 8)) & 0xFFU);
            bits -= 8;
        }
    }
    if (bytes.size() != 2 + 32 + 2) throw std::invalid_argument("not an NKey seed");
    return bytes.substr(2, 32);
}

std::string sign(const std::string& seed, const std::string& message) {
    const auto key = private_key(seed_bytes(seed));
    const std::unique_ptr<EVP_MD_CTX, MdCtxFree> ctx{EVP_MD_CTX_new()};
    std::string signature(64, '\0');
    std::size_t length = signature.size();
    if (!ctx || EVP_DigestSignInit(ctx.get(), nullptr, nullptr, nullptr, key.get()) != 1 ||
        EVP_DigestSign(ctx.get(), reinterpret_cast<unsigned char*>(signature.data()), &length,
                       reinterpret_cast<const unsigned char*>(message.data()),
                       message.size()) != 1) {
        throw std::runtime_error("Ed25519 signing failed");
    }
    signature.resize(length);
    return signature;
}

// A NATS JWT (v2) of `subject` issued by `issuer`, `nats` its NATS claims.
std::string nats_jwt(const NKey& issuer, const std::string& subject, const std::string& name,
                     json nats) {
    const auto now = std::chrono::duration_cast<std::chrono::seconds>(
                         std::chrono::system_clock::now().time_since_epoch())
                         .count();
    nats["version"] = 2;
    std::string nonce(32, '\0');
    if (RAND_bytes(reinterpret_cast<unsigned char*>(nonce.data()), 32) != 1) {
        throw std::runtime_error("RAND_bytes failed");
    }
    const json claims = {{"jti", base32(nonce)}, {"iat", now},     {"iss", issuer.public_key},
                         {"name", name},         {"sub", subject}, {"nats", nats}};
    const auto signing_input =
        base64url(R"({"typ":"JWT","alg":"ed25519-nkey"})") + "." + base64url(claims.dump());
    return signing_input + "." + base64url(sign(issuer.seed, signing_input));
}

}  // namespace

NKey make_nkey(char type) {
    const auto prefix = type_prefix(type);
    const auto pair = raw_pair();
    NKey key;
    std::string seed_raw;
    seed_raw += static_cast<char>(kPrefixSeed | (prefix >> 5U));
    seed_raw += static_cast<char>((prefix & 31U) << 3U);
    key.seed = encode(seed_raw + pair.seed);
    key.public_key = encode(std::string(1, static_cast<char>(prefix)) + pair.public_key);
    return key;
}

void write_secret_file(const std::string& path, const std::string& content) {
    {
        std::ofstream out{path, std::ios::trunc};
        out << content;
        if (!out) throw std::runtime_error("cannot write " + path);
    }
    ::chmod(path.c_str(), 0600);
}

NatsOperatorSetup make_operator_setup() {
    NatsOperatorSetup setup;
    setup.op = make_nkey('O');
    setup.account = make_nkey('A');
    setup.user = make_nkey('U');
    const auto operator_jwt =
        nats_jwt(setup.op, setup.op.public_key, "test-operator", {{"type", "operator"}});
    const json unlimited = {{"subs", -1},         {"data", -1},    {"payload", -1},
                            {"imports", -1},      {"exports", -1}, {"wildcards", true},
                            {"conn", -1},         {"leaf", -1},    {"mem_storage", -1},
                            {"disk_storage", -1}, {"streams", -1}, {"consumer", -1}};
    const auto account_jwt =
        nats_jwt(setup.op, setup.account.public_key, "test-account",
                 {{"type", "account"},
                  {"limits", unlimited},
                  {"default_permissions", {{"pub", json::object()}, {"sub", json::object()}}}});
    setup.user_jwt = nats_jwt(setup.account, setup.user.public_key, "test-user",
                              {{"type", "user"},
                               {"pub", json::object()},
                               {"sub", json::object()},
                               {"subs", -1},
                               {"data", -1},
                               {"payload", -1}});
    // JetStream needs a system account besides (the server's own traffic), without JetStream.
    const auto system = make_nkey('A');
    const auto system_jwt =
        nats_jwt(setup.op, system.public_key, "SYS",
                 {{"type", "account"}, {"limits", {{"subs", -1}, {"conn", -1}, {"data", -1}}}});
    setup.server_config =
        "operator: \"" + operator_jwt + "\"\nsystem_account: " + system.public_key +
        "\nresolver: MEMORY\nresolver_preload: {\n  " + setup.account.public_key + ": \"" +
        account_jwt + "\"\n  " + system.public_key + ": \"" + system_jwt + "\"\n}\n";
    setup.creds = "-----BEGIN NATS USER JWT-----\n" + setup.user_jwt +
                  "\n------END NATS USER JWT------\n\n"
                  "-----BEGIN USER NKEY SEED-----\n" +
                  setup.user.seed + "\n------END USER NKEY SEED------\n";
    return setup;
}

namespace {

void check(natsStatus status, const std::string& what) {
    if (status == NATS_OK) return;
    std::string text = what + ": " + natsStatus_GetText(status);
    if (const char* detail = nats_GetLastError(nullptr); detail && *detail) {
        text += std::string{" ("} + detail + ")";
    }
    throw std::runtime_error(text);
}

// Runs `use` with a JetStream context over a connection logged in with `creds_file`.
template <class Use>
auto with_jetstream(const std::string& url, const std::string& creds_file, Use use) {
    natsOptions* options = nullptr;
    natsConnection* connection = nullptr;
    jsCtx* js = nullptr;
    const auto cleanup = [&] {
        jsCtx_Destroy(js);
        natsConnection_Destroy(connection);
        natsOptions_Destroy(options);
    };
    try {
        check(natsOptions_Create(&options), "options");
        check(natsOptions_SetURL(options, url.c_str()), "url");
        check(natsOptions_SetUserCredentialsFromFiles(options, creds_file.c_str(), nullptr),
              "creds file");
        check(natsOptions_SetAllowReconnect(options, false), "reconnect");
        check(natsConnection_Connect(&connection, options), "connect with " + creds_file);
        check(natsConnection_JetStream(&js, connection, nullptr), "JetStream context");
        auto result = use(js);
        cleanup();
        return result;
    } catch (...) {
        cleanup();
        throw;
    }
}

}  // namespace

void create_stream_as(const std::string& url, const std::string& creds_file,
                      const std::string& stream, const std::vector<std::string>& subjects) {
    with_jetstream(url, creds_file, [&](jsCtx* js) {
        jsStreamConfig config;
        jsStreamConfig_Init(&config);
        config.Name = stream.c_str();
        std::vector<const char*> names;
        for (const auto& subject : subjects) names.push_back(subject.c_str());
        config.Subjects = names.data();
        config.SubjectsLen = static_cast<int>(names.size());
        config.Storage = js_FileStorage;
        jsStreamInfo* info = nullptr;
        jsErrCode error{};
        const auto status = js_AddStream(&info, js, &config, nullptr, &error);
        jsStreamInfo_Destroy(info);
        check(status, "add stream " + stream + " (JetStream error " + std::to_string(error) + ")");
        return 0;
    });
}

std::uint64_t stream_messages_as(const std::string& url, const std::string& creds_file,
                                 const std::string& stream) {
    return with_jetstream(url, creds_file, [&](jsCtx* js) {
        jsStreamInfo* info = nullptr;
        jsErrCode error{};
        const auto status = js_GetStreamInfo(&info, js, stream.c_str(), nullptr, &error);
        const std::uint64_t messages = status == NATS_OK ? info->State.Msgs : 0;
        jsStreamInfo_Destroy(info);
        check(status, "stream info " + stream);
        return messages;
    });
}

}  // namespace outboxd::test
