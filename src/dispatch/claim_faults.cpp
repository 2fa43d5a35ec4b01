#include "outboxd/dispatch/claim_faults.hpp"

#include <algorithm>

#include <spdlog/spdlog.h>

#include "outboxd/util/untrusted_text.hpp"

namespace outboxd::dispatch {
ClaimFaults::ClaimFaults(const Settings& settings, std::uint64_t seed)
    : settings_(settings),
      backoff_(settings.retry_min, settings.retry_max, seed),
      failures_(settings.summary_every) {}

std::chrono::milliseconds ClaimFaults::round_failed(const std::string& error,
                                                    Clock::time_point now) {
    const auto delay = backoff_.next();
    retry_at_ = now + delay;
    if (failures_.failed(now)) {
        spdlog::warn(
            "event=claims_failing database={} failed_rounds={} for_ms={} retry_in_ms={} "
            "error=\"{}\"",
            settings_.database, failures_.failures(), failures_.lasted(now).count(), delay.count(),
            util::log_safe(error));
    }
    return delay;
}

void ClaimFaults::round_succeeded(Clock::time_point now) {
    const auto lasted = failures_.lasted(now);
    if (const auto failed = failures_.succeeded(); failed > 0) {
        spdlog::info("event=claims_recovered database={} failed_rounds={} after_ms={}",
                     settings_.database, failed, lasted.count());
    }
    backoff_.reset();
    retry_at_ = {};
}

void ClaimFaults::route_refused(const store::ClaimScope& scope, const std::string& error,
                                Clock::time_point now) {
    auto [it, first] = resting_.try_emplace(scope);
    auto& rest = it->second;
    // Refused again within as long after its rest as the rest lasted: rest twice as long.
    const bool again = !first && now < rest.until + rest.length;
    rest.length =
        again ? std::min(rest.length * 2, settings_.route_rest_max) : settings_.route_rest;
    rest.until = now + rest.length;
    if (!again || rest.length < settings_.route_rest_max) {
        spdlog::warn(
            "event=claim_route_refused database={} namespace=\"{}\" task_queue=\"{}\" rest_ms={} "
            "error=\"{}\"",
            settings_.database, util::log_safe(scope.namespace_name),
            util::log_safe(scope.task_queue), rest.length.count(), util::log_safe(error));
    }
}

void ClaimFaults::drop_resting(std::vector<worker::Route>& routes, Clock::time_point now) {
    // A rest is remembered for as long again after it ends, to tell a route refused again.
    std::erase_if(resting_, [now](const auto& entry) {
        return entry.second.until + entry.second.length <= now;
    });
    if (resting_.empty()) return;
    std::erase_if(routes, [this, now](const worker::Route& route) {
        const auto it = resting_.find(route.scope);
        return it != resting_.end() && now < it->second.until;
    });
}

}  // namespace outboxd::dispatch
