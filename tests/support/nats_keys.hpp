#pragma once

// NATS's own identities for the tests of NKey and `.creds` logins, made with OpenSSL alone
// (an independent maker beside nats.c, which reads them): NKeys (Ed25519 key pairs encoded
// as NATS encodes them: a type prefix, the key, a CRC-16, base32) and the JWTs of NATS's
// decentralised authentication (operator → account → user, each signed by its issuer's
// key), a user's `.creds` file, and the nats-server configuration that trusts them.

#include <string>
#include <vector>

namespace outboxd::test {

// An NKey pair: `seed` ("S…", the private part, what a seed file holds) and `public_key`
// ("U…" for a user, "A…" for an account, "O…" for an operator).
struct NKey {
    std::string seed;
    std::string public_key;
};

// A fresh key pair of type 'U' (user), 'A' (account) or 'O' (operator).
[[nodiscard]] NKey make_nkey(char type);

// Writes `content` to `path` (mode 0600, as a secret file should be).
void write_secret_file(const std::string& path, const std::string& content);

// An operator, an account with JetStream enabled and a user of that account, with the
// nats-server configuration that trusts the operator (accounts resolved from memory).
struct NatsOperatorSetup {
    NKey op, account, user;
    std::string user_jwt;
    // operator, resolver: MEMORY and resolver_preload of the account: nats-server
    // configuration text (NatsServerAuth::config).
    std::string server_config;
    // The user's `.creds` file text: its JWT and its seed.
    std::string creds;
};
[[nodiscard]] NatsOperatorSetup make_operator_setup();

// Creates a file-backed stream on `subjects` over a connection logged in with `creds_file`,
// and counts what it stores: JetStream of an operator-mode server needs an account's user.
void create_stream_as(const std::string& url, const std::string& creds_file,
                      const std::string& stream, const std::vector<std::string>& subjects);
[[nodiscard]] std::uint64_t stream_messages_as(const std::string& url,
                                               const std::string& creds_file,
                                               const std::string& stream);

}  // namespace outboxd::test
