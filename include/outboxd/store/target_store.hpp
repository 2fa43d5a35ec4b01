#pragma once

// Targets in PostgreSQL (table targets): what the API sets and lists, what
// every node reads each namespace cache TTL, and what delivering nodes report back. See
// OutboxSession for threads, errors and time. Rows are returned as stored: whoever uses
// one checks it first (http_push::check_target), since plain SQL may have written it.
//
// Secrets at rest (README, "Secrets at rest"): with a SecretBox, the signing secret, every
// header value and every credential are written encrypted, bound to the target's name and the
// field, in the columns they always had; without one, in clear. Reads take both: a value in clear
// (written before a key was set) reads as it is and is encrypted on its next write. A value that
// cannot be decrypted does not fail the read: the record says why (SecretsAtRest::problem).

#include <memory>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "outboxd/store/outbox_session.hpp"
#include "outboxd/store/target.hpp"
#include "outboxd/util/secret_box.hpp"

namespace outboxd::store {

class TargetStore {
public:
    // `secrets`: the keys of the secrets at rest; none: they are written in clear.
    explicit TargetStore(OutboxSession& session,
                         std::shared_ptr<const util::SecretBox> secrets = nullptr)
        : session_(session), secrets_(std::move(secrets)) {}

    // Creates or replaces a target (clearing its recorded error). With SecretUpdate::keep the
    // stored signing secret stays (encrypted anew under the first key when it can be read; as
    // it is when it cannot), whatever the settings hold; so do the stored credentials named in
    // `kept`. The table's CHECKs refuse a name, bound or header set out of shape with a
    // ValidationError.
    void put(const TargetSettings& target, SecretUpdate signing_secret = SecretUpdate::replace,
             const KeptCredentials& kept = {});
    std::optional<TargetRecord> get(std::string_view name);
    std::vector<TargetRecord> list();
    // False when there was no such target.
    bool remove(std::string_view name);
    // Records what a node saw of its targets (targets since deleted are skipped).
    void report(std::span<const TargetReport> reports);
    // Encrypts every target's secrets that are in clear or under another key than the first
    // (rotation), in one transaction; a target with a value it cannot decrypt is left as it is
    // and reported. Throws StoreError without keys.
    ResealReport reseal();

private:
    OutboxSession& session_;
    std::shared_ptr<const util::SecretBox> secrets_;
};

}  // namespace outboxd::store
