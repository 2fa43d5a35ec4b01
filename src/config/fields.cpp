#include "fields.hpp"

#include <chrono>
#include <sstream>

#include "convert.hpp"
#include "databases.hpp"

namespace outboxd::config::detail {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

template <typename Number>
std::string number_text(Number value) {
    std::ostringstream out;
    out << value;
    return out.str();
}

std::vector<Field> make_fields() {
    return {
        {kDatabaseUrl, "URL", "libpq connection string or URI", true,
         [](const Config&) -> std::string { return "empty: demo mode, an embedded PostgreSQL"; },
         [](const std::string& text, Config& c) { c.database_url = text; }, kDatabaseUrlFile},
        {kDatabases, "JSON",
         "the outbox databases this node serves, by name: {\"orders\":\"postgresql://…\","
         "\"billing\":{\"url\":\"…\",\"listen_url\":\"…\"}} (names [a-z0-9_-]{1,32}); not with "
         "--database-url",
         false,
         [](const Config&) -> std::string { return "unset: --database-url, named \"default\""; },
         [](const std::string& text, Config& c) { c.databases = parse_databases(text); },
         kDatabasesFile},
        {kControlDatabase, "NAME", "the database holding credentials and the audit log", false,
         [](const Config&) -> std::string { return "the first database"; },
         [](const std::string& text, Config& c) { c.control_database = text; }},
        {kListen, "HOST:PORT",
         "HTTP and WebSocket address: host:port, [ipv6]:port or :port "
         "(all interfaces); port 0 picks a free port",
         false, [](const Config& d) { return d.listen.host + ":" + std::to_string(d.listen.port); },
         [](const std::string& text, Config& c) { c.listen = parse_listen(text, label(kListen)); }},
        {kNodeId, "ID", "unique node name, [A-Za-z0-9._-]{1,128}", true,
         [](const Config&) -> std::string { return "<hostname>-<pid>"; },
         [](const std::string& text, Config& c) { c.node_id = text; }},
        {kAdvertiseUrl, "URL", "ws:// or wss:// URL workers use to reach this node", true,
         [](const Config&) -> std::string {
             return "ws://<listen host, 127.0.0.1 for 0.0.0.0 or ::>:<listen port>/v1/workers";
         },
         [](const std::string& text, Config& c) { c.advertise_url = text; }},
        {kWorkerToken, "TOKEN", "bearer token workers must present; set but empty is refused",
         false, [](const Config&) -> std::string { return "unset: workers need no token"; },
         [](const std::string& text, Config& c) { c.worker_token = text; }, kWorkerTokenFile},
        {kAdminToken, "TOKEN", "bearer token for the admin HTTP API; set but empty is refused",
         false, [](const Config&) -> std::string { return "unset: admin API is open"; },
         [](const std::string& text, Config& c) { c.admin_token = text; }, kAdminTokenFile},
        {kJwtKeysFile, "PATH",
         "PEM public keys (RSA, EC P-256) or a JWKS document that bearer JWTs are verified "
         "against (RS256, ES256)",
         false, [](const Config&) -> std::string { return "unset: JWTs are not accepted"; },
         [](const std::string& text, Config& c) { c.jwt_keys_file = text; }},
        {kJwtIssuer, "ISS", "the `iss` a JWT must carry", false,
         [](const Config&) -> std::string { return "unset: not checked"; },
         [](const std::string& text, Config& c) { c.jwt_issuer = text; }},
        {kJwtAudience, "AUD", "an `aud` a JWT must carry", false,
         [](const Config&) -> std::string { return "unset: not checked"; },
         [](const std::string& text, Config& c) { c.jwt_audience = text; }},
        {kJwtClockSkew, "MS", "how far a JWT's exp and nbf may be off the clock", false,
         [](const Config& d) { return number_text(d.jwt_clock_skew.count()); },
         [](const std::string& text, Config& c) {
             c.jwt_clock_skew = milliseconds{to_integer(kJwtClockSkew, text)};
         }},
        {kPollInterval, "MS", "poll backstop interval", false,
         [](const Config& d) { return number_text(d.poll_interval.count()); },
         [](const std::string& text, Config& c) {
             c.poll_interval = milliseconds{to_integer(kPollInterval, text)};
         }},
        {kClaimLookback, "MS",
         "claims start where their route stood this long ago; rows committed later than "
         "that behind it wait for the poll backstop",
         false, [](const Config& d) { return number_text(d.claim_lookback.count()); },
         [](const std::string& text, Config& c) {
             c.claim_lookback = milliseconds{to_integer(kClaimLookback, text)};
         }},
        {kBatchSize, "N", "max rows claimed per sweep", false,
         [](const Config& d) { return number_text(d.batch_size); },
         [](const std::string& text, Config& c) {
             c.batch_size = static_cast<std::int32_t>(to_integer(kBatchSize, text));
         }},
        {kMaxAttempts, "N", "attempts before a task is dead-lettered", false,
         [](const Config& d) { return number_text(d.max_attempts); },
         [](const std::string& text, Config& c) {
             c.max_attempts = static_cast<std::int32_t>(to_integer(kMaxAttempts, text));
         }},
        {kBackoffBase, "MS", "first retry delay", false,
         [](const Config& d) { return number_text(d.backoff_base.count()); },
         [](const std::string& text, Config& c) {
             c.backoff_base = milliseconds{to_integer(kBackoffBase, text)};
         }},
        {kBackoffMultiplier, "X", "retry delay growth per attempt", false,
         [](const Config& d) { return number_text(d.backoff_multiplier); },
         [](const std::string& text, Config& c) {
             c.backoff_multiplier = to_number(kBackoffMultiplier, text);
         }},
        {kBackoffMax, "MS", "longest retry delay; at least --backoff-base-ms", false,
         [](const Config& d) { return number_text(d.backoff_max.count()); },
         [](const std::string& text, Config& c) {
             c.backoff_max = milliseconds{to_integer(kBackoffMax, text)};
         }},
        {kTaskTimeout, "MS", "how long a worker has to answer a task", false,
         [](const Config& d) { return number_text(d.task_timeout.count()); },
         [](const std::string& text, Config& c) {
             c.task_timeout = milliseconds{to_integer(kTaskTimeout, text)};
         }},
        {kLeaseTtl, "MS", "node heartbeat and shard lease TTL", false,
         [](const Config& d) { return number_text(d.lease_ttl.count()); },
         [](const std::string& text, Config& c) {
             c.lease_ttl = milliseconds{to_integer(kLeaseTtl, text)};
         }},
        {kDefaultMaxInFlight, "N", "platform default in-flight quota per namespace", false,
         [](const Config& d) { return number_text(d.default_max_in_flight); },
         [](const std::string& text, Config& c) {
             c.default_max_in_flight =
                 static_cast<std::int32_t>(to_integer(kDefaultMaxInFlight, text));
         }},
        {kRetention, "S", "how long finished rows are kept, in seconds", false,
         [](const Config& d) { return number_text(d.retention.count()); },
         [](const std::string& text, Config& c) {
             c.retention = seconds{to_integer(kRetention, text)};
         }},
        {kLogLevel, "LEVEL", "debug, info, warn or error", false,
         [](const Config& d) { return d.log_level; },
         [](const std::string& text, Config& c) { c.log_level = to_log_level(kLogLevel, text); }},
        {kMaxFrameBytes, "BYTES", "largest WebSocket frame accepted", false,
         [](const Config& d) { return number_text(d.max_frame_bytes); },
         [](const std::string& text, Config& c) {
             c.max_frame_bytes = static_cast<std::size_t>(to_integer(kMaxFrameBytes, text));
         }},
        {kMaxResultBytes, "BYTES",
         "largest task result kept (compact JSON); larger ones are refused", false,
         [](const Config& d) { return number_text(d.max_result_bytes); },
         [](const std::string& text, Config& c) {
             c.max_result_bytes = static_cast<std::size_t>(to_integer(kMaxResultBytes, text));
         }},
        {kMaxBodyBytes, "BYTES", "largest HTTP request body accepted", false,
         [](const Config& d) { return number_text(d.max_body_bytes); },
         [](const std::string& text, Config& c) {
             c.max_body_bytes = static_cast<std::size_t>(to_integer(kMaxBodyBytes, text));
         }},
        {kDrainTimeout, "MS", "how long shutdown waits for in-flight tasks", false,
         [](const Config& d) { return number_text(d.drain_timeout.count()); },
         [](const std::string& text, Config& c) {
             c.drain_timeout = milliseconds{to_integer(kDrainTimeout, text)};
         }},
        {kQuotaCacheTtl, "MS", "how long a namespace quota read stays cached; 0 disables", false,
         [](const Config& d) { return number_text(d.quota_cache_ttl.count()); },
         [](const std::string& text, Config& c) {
             c.quota_cache_ttl = milliseconds{to_integer(kQuotaCacheTtl, text)};
         }},
        {kMigrate, "BOOL", "apply migrations at start: true, false, 1, 0, yes or no", false,
         [](const Config& d) -> std::string { return d.migrate_on_start ? "true" : "false"; },
         [](const std::string& text, Config& c) {
             c.migrate_on_start = to_boolean(kMigrate, text);
         }},
        {kMetricsPrivate, "BOOL",
         "GET /metrics needs a credential that is reader of every namespace (its labels name "
         "namespaces and targets)",
         false, [](const Config& d) -> std::string { return d.metrics_private ? "true" : "false"; },
         [](const std::string& text, Config& c) {
             c.metrics_private = to_boolean(kMetricsPrivate, text);
         }},
        {kMaxWriteQueue, "FRAMES", "frames queued per worker before a slow one is closed", false,
         [](const Config& d) { return number_text(d.max_write_queue); },
         [](const std::string& text, Config& c) {
             c.max_write_queue = static_cast<std::size_t>(to_integer(kMaxWriteQueue, text));
         }},
        {kMaxWriteQueueBytes, "BYTES", "bytes queued per worker before a slow one is closed", false,
         [](const Config& d) { return number_text(d.max_write_queue_bytes); },
         [](const std::string& text, Config& c) {
             c.max_write_queue_bytes =
                 static_cast<std::size_t>(to_integer(kMaxWriteQueueBytes, text));
         }},
        {kMaxConnections, "N",
         "open HTTP and WebSocket connections; more are answered 503 and closed (lowered at "
         "start to the file descriptor limit less 64)",
         false, [](const Config& d) { return number_text(d.max_connections); },
         [](const std::string& text, Config& c) {
             c.max_connections = static_cast<std::size_t>(to_integer(kMaxConnections, text));
         }},
        {kHttpIdleTimeout, "MS",
         "an HTTP connection idle (or a request unfinished) this long is closed", false,
         [](const Config& d) { return number_text(d.http_idle_timeout.count()); },
         [](const std::string& text, Config& c) {
             c.http_idle_timeout = milliseconds{to_integer(kHttpIdleTimeout, text)};
         }},
        {kTlsCertFile, "FILE",
         "PEM certificate chain; with --tls-key-file the listen address serves HTTPS and wss://",
         false, [](const Config&) -> std::string { return "unset: plain HTTP and ws://"; },
         [](const std::string& text, Config& c) { c.tls_cert_file = text; }},
        {kTlsKeyFile, "FILE", "PEM private key of --tls-cert-file", false,
         [](const Config&) -> std::string { return "unset"; },
         [](const std::string& text, Config& c) { c.tls_key_file = text; }},
        {kHttpAllowedHosts, "LIST",
         "hosts HTTP push targets may name: host names, '*.suffix', addresses and CIDR blocks, "
         "comma-separated; loopback, private, link-local, carrier-grade NAT and cloud metadata "
         "addresses only when an address or block holds them",
         false,
         [](const Config&) -> std::string { return "unset: any host with a public address"; },
         [](const std::string& text, Config& c) { c.http_allowed_hosts = text; }},
        {kHttpMaxResponseBytes, "BYTES",
         "the longest response body of an HTTP push target that is read", false,
         [](const Config& d) { return number_text(d.http_max_response_bytes); },
         [](const std::string& text, Config& c) {
             c.http_max_response_bytes =
                 static_cast<std::size_t>(to_integer(kHttpMaxResponseBytes, text));
         }},
        {kApiStatementTimeout, "MS",
         "server-side limit of each statement of an API request; 0 disables", false,
         [](const Config& d) { return number_text(d.api_statement_timeout.count()); },
         [](const std::string& text, Config& c) {
             c.api_statement_timeout = milliseconds{to_integer(kApiStatementTimeout, text)};
         }},
        {kSecretsKey, "KEYS",
         "keys that encrypt HTTP push targets' secrets in the database: <key id>:<base64 of 32 "
         "bytes>, comma-separated; the first encrypts, every one decrypts",
         false,
         [](const Config&) -> std::string { return "unset: target secrets are stored in clear"; },
         [](const std::string& text, Config& c) { c.secrets_key = text; }, kSecretsKeyFile},
    };
}

}  // namespace

const std::vector<Field>& fields() {
    static const std::vector<Field> table = make_fields();
    return table;
}

}  // namespace outboxd::config::detail
