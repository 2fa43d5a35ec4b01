#include "outboxd/dispatch/task_policy.hpp"

#include <string>

namespace outboxd::dispatch {
namespace {

// The first of the type's and the namespace default's values of one field.
template <typename Get>
auto first_set(const store::ActivityPolicy* type, const store::ActivityPolicy* any, Get get)
    -> std::remove_cvref_t<decltype(get(*type))> {
    if (type) {
        if (auto value = get(*type)) return value;
    }
    if (any) return get(*any);
    return std::nullopt;
}

const store::ActivityPolicy* entry(const store::DeliveryControls& controls, std::string_view key) {
    const auto it = controls.activities.find(std::string{key});
    return it == controls.activities.end() ? nullptr : &it->second;
}

}  // namespace

TaskPolicy task_policy(const store::DeliveryControls& controls, std::string_view activity_type,
                       const TaskDefaults& node) {
    TaskPolicy out{node.failure, node.timeout, std::nullopt, false};
    if (controls.activities.empty()) return out;
    const auto* type = entry(controls, activity_type);
    const auto* any = entry(controls, "*");
    if ((!type || !type->shapes_tasks()) && (!any || !any->shapes_tasks())) return out;
    out.own = true;

    using P = store::ActivityPolicy;
    if (auto attempts = first_set(type, any, [](const P& p) { return p.max_attempts; })) {
        out.failure.max_attempts = *attempts;
    }
    const auto backoff_part = [&](auto get) {
        return first_set(type, any, [&](const P& p) {
            return p.backoff ? get(*p.backoff) : decltype(get(*p.backoff)){};
        });
    };
    using B = store::BackoffPolicy;
    if (auto base = backoff_part([](const B& b) { return b.base_ms; })) {
        out.failure.backoff.base = std::chrono::milliseconds{*base};
    }
    if (auto multiplier = backoff_part([](const B& b) { return b.multiplier; })) {
        out.failure.backoff.multiplier = *multiplier;
    }
    if (auto max = backoff_part([](const B& b) { return b.max_ms; })) {
        out.failure.backoff.max = std::chrono::milliseconds{*max};
    }
    const auto timeout = first_set(type, any, [](const P& p) { return p.timeout_ms; });
    const auto heartbeat = first_set(type, any, [](const P& p) { return p.heartbeat_timeout_ms; });
    if (heartbeat) {
        out.heartbeat_timeout = std::chrono::milliseconds{*heartbeat};
        out.timeout = std::chrono::milliseconds{timeout.value_or(0)};
    } else if (timeout) {
        out.timeout = std::chrono::milliseconds{*timeout};
    }
    return out;
}

}  // namespace outboxd::dispatch
