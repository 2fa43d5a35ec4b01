#include "outboxd/store/delivery_controls.hpp"

#include <cmath>

#include <nlohmann/json.hpp>

namespace outboxd::store {
namespace {

using nlohmann::json;

std::optional<std::int64_t> integer_in(const json& object, const char* key, std::int64_t min,
                                       std::int64_t max) {
    const auto it = object.find(key);
    if (it == object.end() || !it->is_number_integer()) return std::nullopt;
    const auto value = it->get<std::int64_t>();
    if (value < min || value > max) return std::nullopt;
    return value;
}

std::optional<RateLimit> rate_of(const json& policy) {
    const auto it = policy.find("rate_limit");
    if (it == policy.end() || !it->is_object()) return std::nullopt;
    const auto per_second = it->find("per_second");
    const auto burst = integer_in(*it, "burst", 1, kMaxBurst);
    if (per_second == it->end() || !per_second->is_number() || !burst) return std::nullopt;
    return RateLimit{per_second->get<double>(), static_cast<std::int32_t>(*burst)};
}

std::optional<BackoffPolicy> backoff_of(const json& policy) {
    const auto it = policy.find("backoff");
    if (it == policy.end() || !it->is_object()) return std::nullopt;
    BackoffPolicy out;
    out.base_ms = integer_in(*it, "base_ms", 1, kMaxPolicyMs);
    out.max_ms = integer_in(*it, "max_ms", 1, kMaxPolicyMs);
    if (const auto m = it->find("multiplier"); m != it->end() && m->is_number()) {
        const auto value = m->get<double>();
        if (value >= 1 && value <= kMaxBackoffMultiplier) out.multiplier = value;
    }
    return out;
}

std::string in_range(const std::string& where, std::int64_t min, std::int64_t max) {
    return where + " must be between " + std::to_string(min) + " and " + std::to_string(max);
}

}  // namespace

std::optional<std::string> rate_problem(const std::optional<RateLimit>& rate,
                                        const std::string& where) {
    if (!rate || (rate->per_second >= kMinRatePerSecond && rate->per_second <= kMaxRatePerSecond &&
                  rate->burst >= 1 && rate->burst <= kMaxBurst)) {
        return std::nullopt;
    }
    return where + ": per_second must be at least 0.001 (at most " +
           std::to_string(static_cast<std::int64_t>(kMaxRatePerSecond)) +
           ") and burst between 1 and " + std::to_string(kMaxBurst);
}

std::optional<std::string> policy_problem(const std::string& type, const ActivityPolicy& policy) {
    const auto where = "activities." + type + ".";
    if (policy.max_in_flight &&
        (*policy.max_in_flight < 1 || *policy.max_in_flight > kMaxActivityInFlight)) {
        return in_range(where + "max_in_flight", 1, kMaxActivityInFlight);
    }
    if (auto why = rate_problem(policy.rate_limit, where + "rate_limit")) return why;
    if (policy.max_attempts &&
        (*policy.max_attempts < 1 || *policy.max_attempts > kMaxPolicyAttempts)) {
        return in_range(where + "max_attempts", 1, kMaxPolicyAttempts);
    }
    if (policy.timeout_ms &&
        (*policy.timeout_ms < kMinTaskTimeoutMs || *policy.timeout_ms > kMaxPolicyMs)) {
        return in_range(where + "timeout_ms", kMinTaskTimeoutMs, kMaxPolicyMs);
    }
    if (policy.heartbeat_timeout_ms && (*policy.heartbeat_timeout_ms < kMinHeartbeatTimeoutMs ||
                                        *policy.heartbeat_timeout_ms > kMaxPolicyMs)) {
        return in_range(where + "heartbeat_timeout_ms", kMinHeartbeatTimeoutMs, kMaxPolicyMs);
    }
    if (const auto& b = policy.backoff) {
        if (b->base_ms && (*b->base_ms < 1 || *b->base_ms > kMaxPolicyMs)) {
            return in_range(where + "backoff.base_ms", 1, kMaxPolicyMs);
        }
        if (b->max_ms && (*b->max_ms < 1 || *b->max_ms > kMaxPolicyMs)) {
            return in_range(where + "backoff.max_ms", 1, kMaxPolicyMs);
        }
        if (b->multiplier && !(*b->multiplier >= 1 && *b->multiplier <= kMaxBackoffMultiplier)) {
            return in_range(where + "backoff.multiplier", 1,
                            static_cast<std::int64_t>(kMaxBackoffMultiplier));
        }
    }
    return std::nullopt;
}

std::string encode_activities(const std::map<std::string, ActivityPolicy>& activities) {
    auto out = json::object();
    for (const auto& [type, policy] : activities) {
        auto entry = json::object();
        if (policy.max_in_flight) entry["max_in_flight"] = *policy.max_in_flight;
        if (policy.rate_limit) {
            entry["rate_limit"] = {{"per_second", policy.rate_limit->per_second},
                                   {"burst", policy.rate_limit->burst}};
        }
        if (policy.max_attempts) entry["max_attempts"] = *policy.max_attempts;
        if (policy.timeout_ms) entry["timeout_ms"] = *policy.timeout_ms;
        if (policy.heartbeat_timeout_ms)
            entry["heartbeat_timeout_ms"] = *policy.heartbeat_timeout_ms;
        if (const auto& b = policy.backoff) {
            auto backoff = json::object();
            if (b->base_ms) backoff["base_ms"] = *b->base_ms;
            if (b->multiplier) backoff["multiplier"] = *b->multiplier;
            if (b->max_ms) backoff["max_ms"] = *b->max_ms;
            entry["backoff"] = backoff;
        }
        out[type] = entry;
    }
    return out.dump();
}

std::optional<std::map<std::string, ActivityPolicy>> decode_activities(std::string_view text) {
    const auto parsed = json::parse(text, nullptr, false);
    if (!parsed.is_object()) return std::nullopt;
    std::map<std::string, ActivityPolicy> out;
    for (const auto& [type, policy] : parsed.items()) {
        if (!policy.is_object()) continue;
        ActivityPolicy p;
        if (const auto cap = integer_in(policy, "max_in_flight", 1, kMaxActivityInFlight)) {
            p.max_in_flight = static_cast<std::int32_t>(*cap);
        }
        p.rate_limit = rate_of(policy);
        if (const auto attempts = integer_in(policy, "max_attempts", 1, kMaxPolicyAttempts)) {
            p.max_attempts = static_cast<std::int32_t>(*attempts);
        }
        p.timeout_ms = integer_in(policy, "timeout_ms", kMinTaskTimeoutMs, kMaxPolicyMs);
        p.heartbeat_timeout_ms =
            integer_in(policy, "heartbeat_timeout_ms", kMinHeartbeatTimeoutMs, kMaxPolicyMs);
        p.backoff = backoff_of(policy);
        out.emplace(type, p);
    }
    return out;
}

std::string_view to_string(Ordering ordering) noexcept {
    return ordering == Ordering::workflow ? "workflow" : "none";
}

std::string_view to_string(OnDeadLetter policy) noexcept {
    return policy == OnDeadLetter::skip ? "skip" : "block";
}

bool parse_ordering(std::string_view token, Ordering& ordering) noexcept {
    if (token == "none") {
        ordering = Ordering::none;
    } else if (token == "workflow") {
        ordering = Ordering::workflow;
    } else {
        return false;
    }
    return true;
}

bool parse_on_dead_letter(std::string_view token, OnDeadLetter& policy) noexcept {
    if (token == "block") {
        policy = OnDeadLetter::block;
    } else if (token == "skip") {
        policy = OnDeadLetter::skip;
    } else {
        return false;
    }
    return true;
}

}  // namespace outboxd::store
