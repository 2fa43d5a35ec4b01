#pragma once

// The catalogue of settings (README, "Configuration"): each setting's flag, its environment twin
// and, for numbers, its inclusive bounds. Names and bounds are spelled only here, so --help, the
// conversion of raw text, validate() and flag_names() cannot drift apart. Internal to
// src/config.

#include <cstdint>
#include <string>
#include <string_view>

namespace outboxd::config::detail {

struct Setting {
    std::string_view key;  // the flag without its leading "--"
    std::string_view env;
    std::int64_t min = 0;  // bounds of a numeric setting, inclusive
    std::int64_t max = 0;
};

// "--batch-size (OUTBOXD_BATCH_SIZE)": how every complaint names a setting.
[[nodiscard]] std::string label(const Setting& setting);

inline constexpr std::int64_t kDayMs = 86'400'000;
inline constexpr std::int64_t kHourMs = 3'600'000;

inline constexpr Setting kDatabaseUrl{"database-url", "OUTBOXD_DATABASE_URL"};
inline constexpr Setting kDatabases{"databases", "OUTBOXD_DATABASES"};
inline constexpr Setting kControlDatabase{"control-database", "OUTBOXD_CONTROL_DATABASE"};
inline constexpr Setting kListen{"listen", "OUTBOXD_LISTEN"};
inline constexpr Setting kNodeId{"node-id", "OUTBOXD_NODE_ID"};
inline constexpr Setting kAdvertiseUrl{"advertise-url", "OUTBOXD_ADVERTISE_URL"};
inline constexpr Setting kWorkerToken{"worker-token", "OUTBOXD_WORKER_TOKEN"};
inline constexpr Setting kAdminToken{"admin-token", "OUTBOXD_ADMIN_TOKEN"};
inline constexpr Setting kJwtKeysFile{"jwt-keys-file", "OUTBOXD_JWT_KEYS_FILE"};
inline constexpr Setting kJwtIssuer{"jwt-issuer", "OUTBOXD_JWT_ISSUER"};
inline constexpr Setting kJwtAudience{"jwt-audience", "OUTBOXD_JWT_AUDIENCE"};
inline constexpr Setting kJwtClockSkew{"jwt-clock-skew-ms", "OUTBOXD_JWT_CLOCK_SKEW_MS", 0,
                                       3'600'000};
inline constexpr Setting kPollInterval{"poll-interval-ms", "OUTBOXD_POLL_INTERVAL_MS", 1, kHourMs};
inline constexpr Setting kClaimLookback{"claim-lookback-ms", "OUTBOXD_CLAIM_LOOKBACK_MS", 0,
                                        kHourMs};
inline constexpr Setting kBatchSize{"batch-size", "OUTBOXD_BATCH_SIZE", 1, 100'000};
inline constexpr Setting kMaxAttempts{"max-attempts", "OUTBOXD_MAX_ATTEMPTS", 1, 1'000};
inline constexpr Setting kBackoffBase{"backoff-base-ms", "OUTBOXD_BACKOFF_BASE_MS", 1, kDayMs};
inline constexpr Setting kBackoffMultiplier{"backoff-multiplier", "OUTBOXD_BACKOFF_MULTIPLIER", 1,
                                            100};
inline constexpr Setting kBackoffMax{"backoff-max-ms", "OUTBOXD_BACKOFF_MAX_MS", 1, kDayMs};
inline constexpr Setting kTaskTimeout{"task-timeout-ms", "OUTBOXD_TASK_TIMEOUT_MS", 10, kDayMs};
inline constexpr Setting kLeaseTtl{"lease-ttl-ms", "OUTBOXD_LEASE_TTL_MS", 200, 600'000};
inline constexpr Setting kDefaultMaxInFlight{"default-max-in-flight",
                                             "OUTBOXD_DEFAULT_MAX_IN_FLIGHT", 1, 10'000'000};
inline constexpr Setting kRetention{"retention-s", "OUTBOXD_RETENTION_S", 1, 31'536'000};
inline constexpr Setting kLogLevel{"log-level", "OUTBOXD_LOG_LEVEL"};
inline constexpr Setting kMaxFrameBytes{"max-frame-bytes", "OUTBOXD_MAX_FRAME_BYTES", 1'024,
                                        67'108'864};
inline constexpr Setting kMaxResultBytes{"max-result-bytes", "OUTBOXD_MAX_RESULT_BYTES", 16,
                                         16'777'216};
inline constexpr Setting kMaxBodyBytes{"max-body-bytes", "OUTBOXD_MAX_BODY_BYTES", 1'024,
                                       268'435'456};
inline constexpr Setting kDrainTimeout{"drain-timeout-ms", "OUTBOXD_DRAIN_TIMEOUT_MS", 0, kHourMs};
inline constexpr Setting kQuotaCacheTtl{"quota-cache-ttl-ms", "OUTBOXD_QUOTA_CACHE_TTL_MS", 0,
                                        600'000};
inline constexpr Setting kMigrate{"migrate", "OUTBOXD_MIGRATE"};
inline constexpr Setting kMetricsPrivate{"metrics-private", "OUTBOXD_METRICS_PRIVATE"};
inline constexpr Setting kMaxWriteQueue{"max-write-queue", "OUTBOXD_MAX_WRITE_QUEUE", 1, 1'000'000};
inline constexpr Setting kMaxWriteQueueBytes{
    "max-write-queue-bytes", "OUTBOXD_MAX_WRITE_QUEUE_BYTES", 65'536, 1'073'741'824};
inline constexpr Setting kMaxConnections{"max-connections", "OUTBOXD_MAX_CONNECTIONS", 1,
                                         1'000'000};
inline constexpr Setting kHttpIdleTimeout{"http-idle-timeout-ms", "OUTBOXD_HTTP_IDLE_TIMEOUT_MS",
                                          1'000, kHourMs};
inline constexpr Setting kTlsCertFile{"tls-cert-file", "OUTBOXD_TLS_CERT_FILE"};
inline constexpr Setting kTlsKeyFile{"tls-key-file", "OUTBOXD_TLS_KEY_FILE"};
inline constexpr Setting kHttpAllowedHosts{"http-allowed-hosts", "OUTBOXD_HTTP_ALLOWED_HOSTS"};
inline constexpr Setting kHttpMaxResponseBytes{
    "http-max-response-bytes", "OUTBOXD_HTTP_MAX_RESPONSE_BYTES", 1'024, 16'777'216};
inline constexpr Setting kApiStatementTimeout{"api-statement-timeout-ms",
                                              "OUTBOXD_API_STATEMENT_TIMEOUT_MS", 0, kHourMs};
inline constexpr Setting kSecretsKey{"secrets-key", "OUTBOXD_SECRETS_KEY"};

// The file twins of the secret settings: the setting's value is the content of the file
// named, so that it need not sit in the environment or on a command line.
inline constexpr Setting kDatabaseUrlFile{"database-url-file", "OUTBOXD_DATABASE_URL_FILE"};
inline constexpr Setting kDatabasesFile{"databases-file", "OUTBOXD_DATABASES_FILE"};
inline constexpr Setting kWorkerTokenFile{"worker-token-file", "OUTBOXD_WORKER_TOKEN_FILE"};
inline constexpr Setting kAdminTokenFile{"admin-token-file", "OUTBOXD_ADMIN_TOKEN_FILE"};
inline constexpr Setting kSecretsKeyFile{"secrets-key-file", "OUTBOXD_SECRETS_KEY_FILE"};

}  // namespace outboxd::config::detail
