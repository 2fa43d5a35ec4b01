#pragma once

// Which routes are worth a claim statement: a node claims only for routes it knows to have
// due rows, so that routes with nothing to claim (a thousand idle tenants with workers
// connected) cost nothing, however many there are.
//
// A route is active from the moment the node learns it has rows until a claim of it comes
// back short (fewer rows than asked: nothing due is left). It learns of rows
//  - from wakes that name (namespace, task_queue) pairs: the insert trigger names the
//    routes it staged into (every route of such a pair is active at once);
//  - from a probe of the routes that are not active (one index probe each, one statement for
//    all), which the next round runs whenever rows may have become due anywhere: a wake that
//    names no route, the poll backstop (backoffs, scheduled rows, other nodes' rows on new
//    shards), re-arms and resumes (claims from the front), a failed round.
// Routes stay active while their claims fill (a backlog), whatever triggers the rounds.
//
// Pure logic: the claimer's state, one round at a time. Loop thread.

#include <chrono>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "outboxd/worker/worker_registry.hpp"

namespace outboxd::dispatch {

class RouteActivity {
public:
    using Clock = std::chrono::steady_clock;
    using QueueKey = std::pair<std::string, std::string>;  // (namespace, task_queue)

    // New rows in these (namespace, task_queue) pairs.
    void woken(const std::vector<QueueKey>& queues, Clock::time_point now);
    // Rows may have become due on any route: the next round probes every inactive one.
    void look_everywhere() { look_everywhere_ = true; }
    [[nodiscard]] bool looking_everywhere() const { return look_everywhere_; }

    struct Split {
        std::vector<worker::Route> claim;  // active: claim them
        std::vector<worker::Route> probe;  // inactive, to probe first (looking everywhere)
    };
    // Splits the routes that have free worker credit now. Consumes the wakes that name one
    // of them and the look-everywhere request (which the caller hands back with
    // look_everywhere() if the round fails).
    [[nodiscard]] Split split(const std::vector<worker::Route>& routes, Clock::time_point now);

    // After a round: probed routes `found` with due rows become active; a claim that came
    // back `short` (fewer rows than asked) leaves its route inactive.
    void settled(const std::vector<store::ClaimScope>& found,
                 const std::vector<store::ClaimScope>& came_back_short, Clock::time_point now);

    [[nodiscard]] bool active(const store::ClaimScope& scope) const {
        return active_.contains(scope);
    }
    [[nodiscard]] std::size_t active_count() const { return active_.size(); }

    // Wakes for a queue no worker could take rows of (no credit free) are kept this long,
    // for when credit frees; the poll's probe covers them after that.
    static constexpr std::chrono::seconds kWokenKept{5};
    // An active route no worker had credit for in this long is forgotten (its workers left).
    static constexpr std::chrono::seconds kUnusedForgotten{60};

private:
    std::map<store::ClaimScope, Clock::time_point> active_;  // -> last time it had credit
    std::map<QueueKey, Clock::time_point> woken_;            // -> when the wake came
    bool look_everywhere_ = true;                            // a new claimer knows nothing
};

}  // namespace outboxd::dispatch
