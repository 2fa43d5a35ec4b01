#include "outboxd/dispatch/route_activity.hpp"

#include <algorithm>

namespace outboxd::dispatch {

void RouteActivity::woken(const std::vector<QueueKey>& queues, Clock::time_point now) {
    for (const auto& queue : queues) woken_[queue] = now;
}

RouteActivity::Split RouteActivity::split(const std::vector<worker::Route>& routes,
                                          Clock::time_point now) {
    Split out;
    std::erase_if(woken_, [now](const auto& entry) { return now - entry.second > kWokenKept; });
    std::set<QueueKey> matched;
    for (const auto& route : routes) {
        const QueueKey queue{route.scope.namespace_name, route.scope.task_queue};
        if (woken_.contains(queue)) {
            matched.insert(queue);
            active_[route.scope] = now;
        }
        if (const auto it = active_.find(route.scope); it != active_.end()) {
            it->second = now;
            out.claim.push_back(route);
        } else if (look_everywhere_) {
            out.probe.push_back(route);
        }
    }
    look_everywhere_ = false;
    std::erase_if(woken_, [&matched](const auto& entry) { return matched.contains(entry.first); });
    std::erase_if(active_,
                  [now](const auto& entry) { return now - entry.second > kUnusedForgotten; });
    return out;
}

void RouteActivity::settled(const std::vector<store::ClaimScope>& found,
                            const std::vector<store::ClaimScope>& came_back_short,
                            Clock::time_point now) {
    for (const auto& scope : came_back_short) active_.erase(scope);
    // After the short ones: a route probed and claimed in the same round stays active only if
    // its claim filled (the caller lists it as short otherwise).
    for (const auto& scope : found) {
        if (std::find(came_back_short.begin(), came_back_short.end(), scope) ==
            came_back_short.end()) {
            active_.try_emplace(scope, now);
        }
    }
}

}  // namespace outboxd::dispatch
