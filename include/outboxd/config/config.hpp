#pragma once

// Node configuration (README, "Configuration"; a public contract): every setting has an OUTBOXD_*
// environment variable and a --flag twin; flags win. A secret (the database URL, the tokens,
// the secrets key) may instead be read from a file: X_FILE / --x-file names it. Invalid
// values are refused at start with a message naming the setting.

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "outboxd/config/defaults.hpp"

namespace CLI {  // NOLINT(readability-identifier-naming): CLI11's namespace
class App;
}  // namespace CLI

namespace outboxd::config {

// A setting that cannot be used; what() names the setting (flag and variable) and the value.
class ConfigError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

struct ListenAddress {
    std::string host = "0.0.0.0";
    std::uint16_t port = defaults::kPort;  // 0: any free port (tests)
};

// One outbox database a node serves (README, "Several databases").
struct Database {
    std::string name;        // [a-z0-9_-]{1,32}
    std::string url;         // libpq URL or keyword string
    std::string listen_url;  // the wake listener's direct connection; empty: `url`
    bool operator==(const Database&) const = default;
};

struct Config {
    std::string database_url;  // OUTBOXD_DATABASE_URL; empty: demo (embedded) mode
    // OUTBOXD_DATABASES (or OUTBOXD_DATABASES_FILE): the named databases, in the order
    // listed; empty: `database_url` alone, named "default". Never both.
    std::vector<Database> databases;
    // OUTBOXD_CONTROL_DATABASE: the database of credentials and the audit log; empty: the
    // first served.
    std::string control_database;
    ListenAddress listen;       // OUTBOXD_LISTEN
    std::string node_id;        // OUTBOXD_NODE_ID; default hostname-pid
    std::string advertise_url;  // OUTBOXD_ADVERTISE_URL; default ws://<listen>/v1/workers
    std::optional<std::string> worker_token;                           // OUTBOXD_WORKER_TOKEN
    std::optional<std::string> admin_token;                            // OUTBOXD_ADMIN_TOKEN
    std::optional<std::string> jwt_keys_file;                          // OUTBOXD_JWT_KEYS_FILE
    std::string jwt_issuer;                                            // OUTBOXD_JWT_ISSUER
    std::string jwt_audience;                                          // OUTBOXD_JWT_AUDIENCE
    std::chrono::milliseconds jwt_clock_skew{60000};                   // OUTBOXD_JWT_CLOCK_SKEW_MS
    std::chrono::milliseconds poll_interval{defaults::kPollInterval};  // OUTBOXD_POLL_INTERVAL_MS
    std::chrono::milliseconds claim_lookback{
        defaults::kClaimLookback};                                   // OUTBOXD_CLAIM_LOOKBACK_MS
    std::int32_t batch_size = defaults::kBatchSize;                  // OUTBOXD_BATCH_SIZE
    std::int32_t max_attempts = defaults::kMaxAttempts;              // OUTBOXD_MAX_ATTEMPTS
    std::chrono::milliseconds backoff_base{defaults::kBackoffBase};  // OUTBOXD_BACKOFF_BASE_MS
    double backoff_multiplier = defaults::kBackoffMultiplier;        // OUTBOXD_BACKOFF_MULTIPLIER
    std::chrono::milliseconds backoff_max{defaults::kBackoffMax};    // OUTBOXD_BACKOFF_MAX_MS
    std::chrono::milliseconds task_timeout{defaults::kTaskTimeout};  // OUTBOXD_TASK_TIMEOUT_MS
    std::chrono::milliseconds lease_ttl{defaults::kLeaseTtl};        // OUTBOXD_LEASE_TTL_MS
    std::int32_t default_max_in_flight =
        defaults::kDefaultMaxInFlight;                     // OUTBOXD_DEFAULT_MAX_IN_FLIGHT
    std::chrono::seconds retention{defaults::kRetention};  // OUTBOXD_RETENTION_S
    std::string log_level = "info";  // OUTBOXD_LOG_LEVEL: debug|info|warn|error

    // Extensions (same env/flag scheme).
    std::size_t max_frame_bytes = defaults::kMaxFrameBytes;            // OUTBOXD_MAX_FRAME_BYTES
    std::size_t max_result_bytes = defaults::kMaxResultBytes;          // OUTBOXD_MAX_RESULT_BYTES
    std::size_t max_body_bytes = defaults::kMaxBodyBytes;              // OUTBOXD_MAX_BODY_BYTES
    std::chrono::milliseconds drain_timeout{defaults::kDrainTimeout};  // OUTBOXD_DRAIN_TIMEOUT_MS
    std::chrono::milliseconds quota_cache_ttl{
        defaults::kQuotaCacheTtl};  // OUTBOXD_QUOTA_CACHE_TTL_MS
    bool migrate_on_start = true;   // OUTBOXD_MIGRATE (true|false)
    bool metrics_private = false;   // OUTBOXD_METRICS_PRIVATE: /metrics needs reader of '*'
    std::size_t max_write_queue =
        defaults::kMaxWriteQueue;  // OUTBOXD_MAX_WRITE_QUEUE (frames per worker)
    std::size_t max_write_queue_bytes =
        defaults::kMaxWriteQueueBytes;  // OUTBOXD_MAX_WRITE_QUEUE_BYTES (per worker)
    // OUTBOXD_MAX_CONNECTIONS: open HTTP + WebSocket connections; more are answered 503.
    // Lowered at start to what the file descriptor limit allows.
    std::size_t max_connections = defaults::kMaxConnections;
    std::chrono::milliseconds http_idle_timeout{
        defaults::kHttpIdleTimeout};  // OUTBOXD_HTTP_IDLE_TIMEOUT_MS
    // OUTBOXD_API_STATEMENT_TIMEOUT_MS (0: none)
    std::chrono::milliseconds api_statement_timeout{defaults::kApiStatementTimeout};
    // OUTBOXD_TLS_CERT_FILE / OUTBOXD_TLS_KEY_FILE: both set, the listen address serves HTTPS
    // and wss:// only (PEM certificate chain and private key); neither, plain HTTP and ws://.
    std::optional<std::string> tls_cert_file;
    std::optional<std::string> tls_key_file;
    // OUTBOXD_HTTP_ALLOWED_HOSTS: where HTTP push targets may point (README, "HTTP push");
    // empty: any public address (loopback, private, link-local, carrier-grade NAT and cloud
    // metadata addresses only when an address entry holds them).
    std::string http_allowed_hosts;
    // OUTBOXD_HTTP_MAX_RESPONSE_BYTES: the longest response body of a target read.
    std::size_t http_max_response_bytes = defaults::kHttpMaxResponseBytes;
    // OUTBOXD_SECRETS_KEY: the keys of HTTP push targets' secrets at rest (util::SecretBox);
    // unset: they are stored in clear.
    std::optional<std::string> secrets_key;
};

// Binds every setting to a CLI11 app as `--flag` with its OUTBOXD_* environment twin
// (flags win), then converts and validates what was read.
class Options {
public:
    // Adds one option per setting to `app` (and so to its --help). The options write into
    // this object: keep it alive, and in place, until `app` has parsed.
    void bind(CLI::App& app);
    // Converts the raw values, fills derived defaults (node_id, advertise_url) and validates.
    // Throws ConfigError naming the first bad setting, e.g.
    // "--batch-size (OUTBOXD_BATCH_SIZE): must be an integer between 1 and 100000, got 'x'".
    [[nodiscard]] Config resolve() const;

private:
    std::map<std::string, std::string> raw_;  // flag name without dashes -> text as given
};

// The databases a node serves: `databases`, or `database_url` named "default".
[[nodiscard]] std::vector<Database> served_databases(const Config& config);
// The control database among them (credentials, the audit log).
[[nodiscard]] const Database& control_database(const std::vector<Database>& served,
                                               const Config& config);

// Validates an assembled Config (also used by Options::resolve). Throws ConfigError.
void validate(const Config& config);

// Parses "host:port" (also "[v6]:port" and ":port"). Throws ConfigError naming `setting`.
[[nodiscard]] ListenAddress parse_listen(const std::string& text, const std::string& setting);

// The flags Options::bind adds (with leading "--"), for --help and for checking deployment files.
[[nodiscard]] std::vector<std::string> flag_names();
// Their environment twins, in the same order.
[[nodiscard]] std::vector<std::string> env_names();

}  // namespace outboxd::config
