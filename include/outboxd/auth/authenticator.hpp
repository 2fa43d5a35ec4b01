#pragma once

// Who a bearer is (README, "Security"): the node's one answer to "which grant does this
// request or worker connection act with?". It knows the bootstrap tokens
// (OUTBOXD_ADMIN_TOKEN, OUTBOXD_WORKER_TOKEN), the JWT verifier when one is configured,
// and the managed credentials (a copy of the control database's table that CredentialBook
// keeps fresh). Checking a bearer is a hash lookup or a signature check in memory: never a
// database round trip.
//
// Open areas: with no bootstrap token, no JWT keys and no managed credential, a node is
// open, as before credentials existed — the API acts as admin for anyone, the worker socket
// as a worker of every namespace. A bootstrap token closes its own area only (the admin
// token the API, the worker token the worker socket), as the two tokens always did; JWT
// keys or one managed credential close both.
//
// Thread affinity: the loop thread.

#include <chrono>
#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "outboxd/auth/grant.hpp"
#include "outboxd/store/access_store.hpp"

namespace outboxd::auth {

// A verifier of bearers that are not the node's own secrets (a JWT's signature and
// claims), behind an interface so the authenticator needs no JOSE library.
class BearerVerifier {
public:
    virtual ~BearerVerifier() = default;
    // Whether `bearer` is for this verifier to judge (cheap: its shape).
    [[nodiscard]] virtual bool takes(std::string_view bearer) const = 0;
    // The grant it carries, or why it is refused.
    [[nodiscard]] virtual std::variant<Grant, std::string> verify(
        std::string_view bearer, std::chrono::system_clock::time_point now) const = 0;
};

struct BootstrapTokens {
    std::optional<std::string> admin;   // OUTBOXD_ADMIN_TOKEN: admin of '*'
    std::optional<std::string> worker;  // OUTBOXD_WORKER_TOKEN: worker of '*'
};

// Where a bearer is presented.
enum class Area { api, workers };

// A new managed credential's secret and what the table keeps of it.
struct NewSecret {
    std::string secret;  // "obx_" + 43 base64url characters (256 random bits)
    std::string sha256;  // lower-case hex
};
[[nodiscard]] NewSecret new_secret();
[[nodiscard]] std::string new_credential_id();  // "cred_" + 16 hex digits
[[nodiscard]] std::string sha256_hex(std::string_view text);

// The grant a stored credential gives (unknown role names are skipped: the table's check
// admits none).
[[nodiscard]] Grant grant_of(const store::CredentialRecord& credential);

class Authenticator {
public:
    using Clock = std::function<std::chrono::system_clock::time_point()>;
    using Result = std::variant<std::shared_ptr<const Grant>, std::string>;

    Authenticator(
        BootstrapTokens tokens, std::shared_ptr<const BearerVerifier> jwt,
        Clock clock = [] { return std::chrono::system_clock::now(); });

    // The grant `bearer` carries in `area`, or why it is refused (a 401's message). No
    // bearer on an open area is the anonymous grant.
    [[nodiscard]] Result authenticate(const std::optional<std::string>& bearer, Area area) const;
    // Whether any credential guards the node (a node without one warns at start and
    // refuses browser requests from other origins).
    [[nodiscard]] bool guarded() const;
    // Whether `grant` still stands: not expired, and a managed credential not deleted.
    [[nodiscard]] bool still_valid(const Grant& grant) const;

    // The managed credentials, as last read from the control database, and its clock then:
    // expiry is judged by the database's clock (a node's own may be off).
    void replace_managed(const std::vector<store::CredentialRecord>& credentials,
                         std::chrono::system_clock::time_point database_now);
    // The database's clock, read again while the credentials stayed as they were.
    void set_database_now(std::chrono::system_clock::time_point database_now) {
        clock_offset_ = database_now - clock_();
    }
    // Now, by the database's clock as last read.
    [[nodiscard]] std::chrono::system_clock::time_point now() const {
        return clock_() + clock_offset_;
    }
    void add_managed(const store::CredentialRecord& credential);
    void remove_managed(const std::string& id);
    [[nodiscard]] bool managed_loaded() const { return loaded_; }
    [[nodiscard]] std::size_t managed_count() const { return by_id_.size(); }

private:
    [[nodiscard]] std::shared_ptr<const Grant> anonymous(Area area) const;

    BootstrapTokens tokens_;
    std::shared_ptr<const BearerVerifier> jwt_;
    Clock clock_;
    std::string admin_hash_, worker_hash_;
    std::shared_ptr<const Grant> admin_grant_, worker_grant_, open_api_, open_workers_;
    std::map<std::string, std::shared_ptr<const Grant>, std::less<>> by_hash_;
    std::map<std::string, std::string, std::less<>> by_id_;  // id -> hash
    std::chrono::system_clock::duration clock_offset_{};
    bool loaded_ = false;
};

}  // namespace outboxd::auth
