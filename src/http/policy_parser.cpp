#include "policy_parser.hpp"

#include <cmath>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "outboxd/util/untrusted_text.hpp"

namespace outboxd::http {
namespace {

using nlohmann::json;

std::int64_t integer_in(const json& value, const std::string& name, std::int64_t min,
                        std::int64_t max) {
    if (!value.is_number_integer() ||
        (value.is_number_unsigned() && value.get<std::uint64_t>() > std::uint64_t(INT64_MAX)) ||
        value.get<std::int64_t>() < min || value.get<std::int64_t>() > max) {
        throw std::invalid_argument("'" + name + "' must be an integer between " +
                                    std::to_string(min) + " and " + std::to_string(max));
    }
    return value.get<std::int64_t>();
}

store::BackoffPolicy parse_backoff(const json& value, const std::string& where) {
    if (!value.is_object()) {
        throw std::invalid_argument("'" + where +
                                    "' must be an object of base_ms, multiplier and max_ms");
    }
    store::BackoffPolicy out;
    for (const auto& [key, part] : value.items()) {
        if (part.is_null()) continue;
        if (key == "base_ms") {
            out.base_ms = integer_in(part, where + ".base_ms", 1, store::kMaxPolicyMs);
        } else if (key == "max_ms") {
            out.max_ms = integer_in(part, where + ".max_ms", 1, store::kMaxPolicyMs);
        } else if (key == "multiplier") {
            if (!part.is_number() || !std::isfinite(part.get<double>()) || part.get<double>() < 1 ||
                part.get<double>() > store::kMaxBackoffMultiplier) {
                throw std::invalid_argument("'" + where +
                                            ".multiplier' must be a number between 1 and 100");
            }
            out.multiplier = part.get<double>();
        } else {
            throw std::invalid_argument("unknown field '" + where + "." +
                                        util::sanitize_text(key, 80) + "'");
        }
    }
    if (out.base_ms && out.max_ms && *out.max_ms < *out.base_ms) {
        throw std::invalid_argument("'" + where + ".max_ms' must not be below '" + where +
                                    ".base_ms'");
    }
    return out;
}

}  // namespace

bool parse_task_policy_field(const std::string& key, const json& value, const std::string& where,
                             store::ActivityPolicy& policy) {
    const auto name = where + "." + key;
    if (key == "max_attempts") {
        policy.max_attempts =
            static_cast<std::int32_t>(integer_in(value, name, 1, store::kMaxPolicyAttempts));
    } else if (key == "timeout_ms") {
        policy.timeout_ms = integer_in(value, name, store::kMinTaskTimeoutMs, store::kMaxPolicyMs);
    } else if (key == "heartbeat_timeout_ms") {
        policy.heartbeat_timeout_ms =
            integer_in(value, name, store::kMinHeartbeatTimeoutMs, store::kMaxPolicyMs);
    } else if (key == "backoff") {
        policy.backoff = parse_backoff(value, name);
    } else {
        return false;
    }
    return true;
}

}  // namespace outboxd::http
