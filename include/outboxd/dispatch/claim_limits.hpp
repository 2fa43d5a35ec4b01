#pragma once

// Every "held until" decision of the claim path (README, "Delivery controls"), in one place:
// - judge: when a limited part of a route may claim again, from what its claim saw of its
//   limits (store facts: the tokens of its buckets, the room its concurrency limit left): a
//   rate limit waits for a claim's worth of tokens, a concurrency limit rests a little (its
//   rows end elsewhere, unseen);
// - parts: which parts (namespace, activity type; "" for the namespace's own rate limit) are
//   held back, until when. A round works on a copy of them on the claims lane (Parts), so
//   that a part one route's claim emptied is not claimed for another route in the same
//   round, and hands back what it learned;
// - routes: which routes a limit held back (whole scopes), left out of the rounds until the
//   soonest of them may go on, when a timer asks for a sweep;
// - slots: an outcome write that lands may have freed a concurrency slot, so what a full
//   concurrency limit held goes at once.
//
// Thread affinity: the loop thread, except a round's copy of the parts (its own).

#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/steady_timer.hpp>

#include "outboxd/store/claim_store.hpp"
#include "outboxd/util/lifetime.hpp"
#include "outboxd/worker/worker_registry.hpp"

namespace outboxd::dispatch {

class ClaimLimits {
public:
    using Clock = std::chrono::steady_clock;
    using Key = std::pair<std::string, std::string>;  // namespace, activity type ("": its rate)

    // When a part may claim again: nothing while its limits leave room.
    struct Verdict {
        std::optional<std::chrono::milliseconds> wait;
        bool full = false;  // the wait is a full concurrency limit's (an answer may end it)
    };
    // The verdict on a limited claim that saw `facts` and took `taken` rows. Pure.
    [[nodiscard]] static Verdict judge(const store::ClaimStore::LimitFacts& facts,
                                       std::size_t taken);

    // The parts held back, as a round sees and updates them.
    struct Parts {
        std::map<Key, Clock::time_point> until;
        std::set<Key> full;  // held by a full concurrency limit

        // Until when a claim of `type` of `ns` (and, with `namespace_rate`, of its
        // namespace's rate) is held back at `now`; none: it may claim.
        [[nodiscard]] std::optional<Clock::time_point> held(const std::string& ns,
                                                            const std::string& type,
                                                            bool namespace_rate,
                                                            Clock::time_point now) const;
        // A claim of `type` of `ns` under `controls` came back with `verdict`: the part its
        // wait is about is held until then. Returns the wait, if any.
        std::optional<std::chrono::milliseconds> learn(
            const std::string& ns, const store::ClaimStore::ClaimControls& controls,
            const Verdict& verdict, Clock::time_point now);
        // Every part a full concurrency limit held goes.
        void slots_freed();
    };

    // A route a limit held back in a round: until `now + wait`; `full`: by a full
    // concurrency limit.
    struct HeldRoute {
        store::ClaimScope scope;
        std::chrono::milliseconds wait{0};
        bool full = false;
    };

    // `look_again` runs on the loop when the soonest held route may go on.
    ClaimLimits(const boost::asio::any_io_executor& loop, std::function<void()> look_again);

    // The parts held now, for a round to work on (it hands them back: round_learned()).
    [[nodiscard]] Parts lend_parts() {
        lent_ = true;
        freed_during_round_ = false;
        return parts_;
    }
    // A round ended: the parts as it left them, and the routes it held back.
    void round_learned(Parts parts, const std::vector<HeldRoute>& routes, Clock::time_point now);
    // A claim apart ended (it starts from no parts held: each asks the database): the
    // routes it held back.
    void hold(const std::vector<HeldRoute>& routes, Clock::time_point now);
    // Leaves out of `routes` those held back at `now`.
    void drop_held(std::vector<worker::Route>& routes, Clock::time_point now);
    // An outcome write landed: a full concurrency limit may have room now.
    void slots_freed();
    void stop() { timer_.cancel(); }

private:
    struct Held {
        Clock::time_point until;
        bool full = false;
    };

    Parts parts_;
    // A round holds a copy of the parts; slots freed meanwhile are applied to what it hands
    // back (not to holds a later round learns).
    bool lent_ = false;
    bool freed_during_round_ = false;
    std::map<store::ClaimScope, Held> routes_;
    std::function<void()> look_again_;
    boost::asio::steady_timer timer_;
    std::optional<Clock::time_point> timer_at_;
    util::Lifetime lifetime_;
};

}  // namespace outboxd::dispatch
