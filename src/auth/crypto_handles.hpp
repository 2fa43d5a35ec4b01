#pragma once

// Ownership of libcjose's C objects, and of OpenSSL's error queue. Internal to src/auth.
//
// cjose counts references on a JWK with a plain (non-atomic) integer, so a JWK is never
// retained here: one unique_ptr owns it, and sharing between threads goes through a
// shared_ptr to the immutable key set that holds it.
//
// cjose is always given a null cjose_err*. With one, a failed crypto step makes cjose drain
// the thread's OpenSSL error queue and format the last entry with ERR_error_string(e, NULL),
// into a static buffer that threads verifying at once would all write; and its other
// messages only restate the code ("invalid argument"). The reason is read from OpenSSL's
// queue instead, which ClearOpensslErrors then empties.

#include <cstdint>
#include <memory>

#include <cjose/cjose.h>
#include <openssl/err.h>

namespace outboxd::auth {

struct JwkRelease {
    void operator()(cjose_jwk_t* jwk) const noexcept { cjose_jwk_release(jwk); }
};
using JwkPtr = std::unique_ptr<cjose_jwk_t, JwkRelease>;

struct JwsRelease {
    void operator()(cjose_jws_t* jws) const noexcept { cjose_jws_release(jws); }
};
using JwsPtr = std::unique_ptr<cjose_jws_t, JwsRelease>;

// Buffers cjose allocates for its caller (base64url output) go back through its own
// deallocator, which a program may have replaced.
struct CjoseFree {
    void operator()(void* buffer) const noexcept { cjose_get_dealloc()(buffer); }
};
using CjoseBytes = std::unique_ptr<std::uint8_t, CjoseFree>;

// Empties this thread's OpenSSL error queue when the scope ends: a failed verification
// leaves entries there, and a TLS stream on the same thread would read a non-empty queue as
// its own failure (SSL_get_error).
class ClearOpensslErrors final {
public:
    ClearOpensslErrors() = default;
    ClearOpensslErrors(const ClearOpensslErrors&) = delete;
    ClearOpensslErrors& operator=(const ClearOpensslErrors&) = delete;
    ~ClearOpensslErrors() { ERR_clear_error(); }
};

}  // namespace outboxd::auth
