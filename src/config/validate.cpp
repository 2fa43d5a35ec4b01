#include <cmath>
#include <fstream>
#include <string>

#include "convert.hpp"
#include "databases.hpp"
#include "host_identity.hpp"
#include "outboxd/config/config.hpp"
#include "outboxd/util/secret_box.hpp"

namespace outboxd::config {
namespace {

using detail::check_range;
using detail::refuse;

void check_token(const detail::Setting& setting, const std::optional<std::string>& token) {
    // An empty bearer token would match an empty Authorization header: refuse, never open.
    if (token && token->empty()) refuse(setting, "must not be empty; unset it to disable");
}

void check_identity(const Config& config) {
    if (config.listen.host.empty()) refuse(detail::kListen, "host must not be empty");
    if (!detail::is_valid_node_id(config.node_id)) {
        refuse(detail::kNodeId, "must match [A-Za-z0-9._-]{1,128}, got '" + config.node_id + "'");
    }
    const std::string_view url = config.advertise_url;
    const bool websocket = (url.starts_with("ws://") && url.size() > 5) ||
                           (url.starts_with("wss://") && url.size() > 6);
    if (!websocket) {
        refuse(detail::kAdvertiseUrl,
               "must be a ws:// or wss:// URL, got '" + config.advertise_url + "'");
    }
    check_token(detail::kWorkerToken, config.worker_token);
    check_token(detail::kAdminToken, config.admin_token);
}

void check_ranges(const Config& config) {
    check_range(detail::kPollInterval, config.poll_interval.count());
    check_range(detail::kClaimLookback, config.claim_lookback.count());
    check_range(detail::kBatchSize, config.batch_size);
    check_range(detail::kMaxAttempts, config.max_attempts);
    check_range(detail::kBackoffBase, config.backoff_base.count());
    check_range(detail::kBackoffMax, config.backoff_max.count());
    check_range(detail::kTaskTimeout, config.task_timeout.count());
    check_range(detail::kLeaseTtl, config.lease_ttl.count());
    check_range(detail::kDefaultMaxInFlight, config.default_max_in_flight);
    check_range(detail::kRetention, config.retention.count());
    check_range(detail::kMaxFrameBytes, config.max_frame_bytes);
    check_range(detail::kMaxBodyBytes, config.max_body_bytes);
    check_range(detail::kMaxResultBytes, config.max_result_bytes);
    check_range(detail::kDrainTimeout, config.drain_timeout.count());
    check_range(detail::kQuotaCacheTtl, config.quota_cache_ttl.count());
    check_range(detail::kJwtClockSkew, config.jwt_clock_skew.count());
    check_range(detail::kMaxWriteQueue, config.max_write_queue);
    check_range(detail::kMaxWriteQueueBytes, config.max_write_queue_bytes);
    check_range(detail::kMaxConnections, config.max_connections);
    check_range(detail::kHttpIdleTimeout, config.http_idle_timeout.count());
    check_range(detail::kApiStatementTimeout, config.api_statement_timeout.count());
    check_range(detail::kHttpMaxResponseBytes, config.http_max_response_bytes);

    const double multiplier = config.backoff_multiplier;
    const auto& bounds = detail::kBackoffMultiplier;
    if (!std::isfinite(multiplier) || multiplier < static_cast<double>(bounds.min) ||
        multiplier > static_cast<double>(bounds.max)) {
        refuse(bounds, "must be a number between " + std::to_string(bounds.min) + " and " +
                           std::to_string(bounds.max) + ", got " + std::to_string(multiplier));
    }
    if (!detail::is_log_level(config.log_level)) {
        refuse(detail::kLogLevel,
               "must be debug, info, warn or error, got '" + config.log_level + "'");
    }
}

void check_readable(const detail::Setting& setting, const std::optional<std::string>& path) {
    if (!path) return;
    std::ifstream file{*path};
    if (!file) refuse(setting, "cannot read '" + *path + "'");
}

void check_tls(const Config& config) {
    if (config.tls_cert_file.has_value() != config.tls_key_file.has_value()) {
        refuse(
            config.tls_cert_file ? detail::kTlsKeyFile : detail::kTlsCertFile,
            "must be set together with " +
                detail::label(config.tls_cert_file ? detail::kTlsCertFile : detail::kTlsKeyFile));
    }
    check_readable(detail::kTlsCertFile, config.tls_cert_file);
    check_readable(detail::kTlsKeyFile, config.tls_key_file);
    // Workers follow advertised URLs: a ws:// one would take their token off TLS.
    if (config.tls_cert_file && config.advertise_url.starts_with("ws://")) {
        refuse(detail::kAdvertiseUrl,
               "must be a wss:// URL when TLS is on, got '" + config.advertise_url + "'");
    }
}

// The key list is checked here, so that a bad one stops the node before it touches a target;
// SecretBox's complaints never quote key material.
void check_secrets_key(const Config& config) {
    if (!config.secrets_key) return;
    check_token(detail::kSecretsKey, config.secrets_key);
    if (const auto problem = util::SecretBox::keys_problem(*config.secrets_key)) {
        refuse(detail::kSecretsKey, *problem);
    }
}

}  // namespace

void validate(const Config& config) {
    check_identity(config);
    check_ranges(config);
    check_tls(config);
    check_secrets_key(config);
    detail::check_databases(config);
    // Cross-field rules come last so that each side is already known to be in range.
    if (config.backoff_max < config.backoff_base) {
        refuse(detail::kBackoffMax, "must be at least --backoff-base-ms, which is " +
                                        std::to_string(config.backoff_base.count()) + "; got " +
                                        std::to_string(config.backoff_max.count()));
    }
}

}  // namespace outboxd::config
