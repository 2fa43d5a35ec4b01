#pragma once

// Targets as stored (table targets, migrations 0011 and 0023): what PUT /v1/targets/{name}
// sets, and what the delivering nodes report back. A target is a destination of some kind
// (HTTP push, NATS JetStream, AMQP, …); the store knows no kind: the rules a target must
// satisfy are its kind's (sinks::targets::check_target), the store keeps what it is given and
// the table's CHECKs. The settings hold secrets in clear: the store encrypts them on the way in
// and decrypts them on the way out (TargetStore).

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "outboxd/store/outbox_row.hpp"

namespace outboxd::store {

struct TargetSettings {
    std::string kind = "http";  // whose rules and channel (sinks::targets::DestinationKind)
    std::string name;
    std::string namespace_name = "default";
    std::string task_queue = "default";
    std::vector<std::string> activity_types;
    std::string url;
    std::int32_t max_in_flight = 64;  // cluster-wide concurrent requests
    std::int32_t timeout_ms = 30000;  // one request, connect to last response byte
    std::optional<std::string> signing_secret;
    std::vector<std::pair<std::string, std::string>> headers;  // sent with every request
    std::optional<std::string> ca_file;  // TLS: trust this CA file instead of the system's
    // The kind's own settings (a subject, an exchange, the body, …), checked by the kind.
    std::map<std::string, std::string> options;
    // The kind's secrets (a password, a token, …): never shown, encrypted at rest.
    std::map<std::string, std::string> credentials;

    friend bool operator==(const TargetSettings&, const TargetSettings&) = default;
};

// What a write does with the stored signing secret: take the settings' one (none: clear
// it), or keep the one stored.
enum class SecretUpdate { replace, keep };

// What a write does with the stored credentials: the settings' ones replace those they name;
// those named here are kept as stored (a body that left them out); the rest are cleared.
using KeptCredentials = std::vector<std::string>;

// How a target's secrets (its signing secret and header values) are kept in the database.
struct SecretsAtRest {
    std::int32_t encrypted = 0;        // values stored encrypted
    std::int32_t clear = 0;            // values stored in clear (no key when they were written)
    std::vector<std::string> key_ids;  // the keys the encrypted ones name, sorted
    // Why the reading node cannot decrypt them all (a key id it does not hold, a value altered
    // or moved from another target). The settings then hold those values as stored, which
    // must not be used: the target is unusable on that node.
    std::optional<std::string> problem;
};

// A target with what the nodes last reported of it.
struct TargetRecord {
    TargetSettings settings;
    SecretsAtRest secrets;
    TimePoint created_at;
    TimePoint updated_at;
    std::optional<std::string> last_error;
    std::optional<TimePoint> last_error_at;
    std::optional<TimePoint> last_success_at;
};

// What TargetStore::reseal did.
struct ResealReport {
    std::int32_t targets = 0;  // targets rewritten
    std::int32_t values = 0;   // values encrypted anew (clear ones, or under an older key)
    std::vector<std::pair<std::string, std::string>> unreadable;  // target, why: left as is
};

// What one node saw of a target since its last report.
struct TargetReport {
    std::string name;
    std::optional<std::string> error;  // the latest failure, when there was one
    bool succeeded = false;            // some request got a 2xx
};

}  // namespace outboxd::store
