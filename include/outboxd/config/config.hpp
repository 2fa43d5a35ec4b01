#pragma once

// Node configuration (README, "Configuration"; a public contract): every setting has an OUTBOXD_*
// environment variable and a --flag twin; flags win. Invalid values are refused at start
// with a message naming the setting.

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace CLI {
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
    std::uint16_t port = 8080;  // 0: any free port (tests)
};

struct Config {
    std::string database_url;   // OUTBOXD_DATABASE_URL; empty: demo (embedded) mode
    ListenAddress listen;       // OUTBOXD_LISTEN
    std::string node_id;        // OUTBOXD_NODE_ID; default hostname-pid
    std::string advertise_url;  // OUTBOXD_ADVERTISE_URL; default ws://<listen>/v1/workers
    std::optional<std::string> worker_token;        // OUTBOXD_WORKER_TOKEN
    std::optional<std::string> admin_token;         // OUTBOXD_ADMIN_TOKEN
    std::chrono::milliseconds poll_interval{500};   // OUTBOXD_POLL_INTERVAL_MS
    std::chrono::milliseconds claim_lookback{100};  // OUTBOXD_CLAIM_LOOKBACK_MS
    std::int32_t batch_size = 256;                  // OUTBOXD_BATCH_SIZE
    std::int32_t max_attempts = 10;                 // OUTBOXD_MAX_ATTEMPTS
    std::chrono::milliseconds backoff_base{1000};   // OUTBOXD_BACKOFF_BASE_MS
    double backoff_multiplier = 2.0;                // OUTBOXD_BACKOFF_MULTIPLIER
    std::chrono::milliseconds backoff_max{300000};  // OUTBOXD_BACKOFF_MAX_MS
    std::chrono::milliseconds task_timeout{30000};  // OUTBOXD_TASK_TIMEOUT_MS
    std::chrono::milliseconds lease_ttl{5000};      // OUTBOXD_LEASE_TTL_MS
    std::int32_t default_max_in_flight = 10000;     // OUTBOXD_DEFAULT_MAX_IN_FLIGHT
    std::chrono::seconds retention{86400};          // OUTBOXD_RETENTION_S
    std::string log_level = "info";                 // OUTBOXD_LOG_LEVEL: debug|info|warn|error

    // Extensions (same env/flag scheme).
    std::size_t max_frame_bytes = 1 << 20;            // OUTBOXD_MAX_FRAME_BYTES
    std::size_t max_body_bytes = 8 << 20;             // OUTBOXD_MAX_BODY_BYTES
    std::chrono::milliseconds drain_timeout{30000};   // OUTBOXD_DRAIN_TIMEOUT_MS
    std::chrono::milliseconds quota_cache_ttl{1000};  // OUTBOXD_QUOTA_CACHE_TTL_MS
    bool migrate_on_start = true;                     // OUTBOXD_MIGRATE (true|false)
    std::size_t max_write_queue = 4096;               // OUTBOXD_MAX_WRITE_QUEUE (frames per worker)
    std::size_t max_write_queue_bytes = 16 << 20;     // OUTBOXD_MAX_WRITE_QUEUE_BYTES (per worker)
    // OUTBOXD_MAX_CONNECTIONS: open HTTP + WebSocket connections; more are answered 503.
    // Lowered at start to what the file descriptor limit allows.
    std::size_t max_connections = 4096;
    std::chrono::milliseconds http_idle_timeout{60000};  // OUTBOXD_HTTP_IDLE_TIMEOUT_MS
    std::chrono::milliseconds api_statement_timeout{
        10000};  // OUTBOXD_API_STATEMENT_TIMEOUT_MS (0: none)
    // OUTBOXD_TLS_CERT_FILE / OUTBOXD_TLS_KEY_FILE: both set, the listen address serves HTTPS
    // and wss:// only (PEM certificate chain and private key); neither, plain HTTP and ws://.
    std::optional<std::string> tls_cert_file;
    std::optional<std::string> tls_key_file;
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

// Validates an assembled Config (also used by Options::resolve). Throws ConfigError.
void validate(const Config& config);

// Parses "host:port" (also "[v6]:port" and ":port"). Throws ConfigError naming `setting`.
[[nodiscard]] ListenAddress parse_listen(const std::string& text, const std::string& setting);

// The flags Options::bind adds (with leading "--"), for --help and for checking deployment files.
[[nodiscard]] std::vector<std::string> flag_names();
// Their environment twins, in the same order.
[[nodiscard]] std::vector<std::string> env_names();

}  // namespace outboxd::config
