#pragma once

// The claim side of a node: decides which routes are worth a claim now and runs the claims,
// one round at a time, and owns everything carried from round to round:
// - which routes have due rows (RouteActivity), which a limit holds back (ClaimLimits), which
//   rest after their claim failed and how long failed rounds back off (ClaimFaults);
// - the generations, the release point and the backstop's pacing (ClaimMarks), and, on the
//   lane, the claimed tally, the cursors and the fair share (ClaimerState);
// - the claims apart: beside a round in flight, a wake for routes that were idle claims them
//   at once, in a small claim of their own, so that a quiet tenant waits for neither a busy
//   one's round nor its own. A namespace is in one claim at a time (the round's or the claim
//   apart's), so that each plans under its quota alone; the rows claimed apart raise the
//   next round's tally.
//
// Thread affinity: the loop thread; the claims run where the RoundRunner runs them.

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/steady_timer.hpp>

#include "outboxd/config/defaults.hpp"
#include "outboxd/dispatch/claim_faults.hpp"
#include "outboxd/dispatch/claim_limits.hpp"
#include "outboxd/dispatch/claim_marks.hpp"
#include "outboxd/dispatch/claim_round.hpp"
#include "outboxd/dispatch/namespace_cache.hpp"
#include "outboxd/dispatch/ports.hpp"
#include "outboxd/dispatch/route_activity.hpp"
#include "outboxd/metrics/node_metrics.hpp"
#include "outboxd/util/clock.hpp"
#include "outboxd/util/lifetime.hpp"

namespace outboxd::dispatch {

class Claimer {
public:
    using Clock = std::chrono::steady_clock;
    using QueueKey = RouteActivity::QueueKey;

    struct Settings {
        std::chrono::milliseconds poll_interval{defaults::kPollInterval};
        std::int32_t batch_size = defaults::kBatchSize;
        std::chrono::milliseconds lookback{defaults::kClaimLookback};  // see ClaimCursors
        std::int32_t apart_batch = defaults::kClaimApartBatch;         // rows of a claim apart
    };

    // What a claim came back with.
    struct Round {
        ClaimRoundResult result;
        std::string error;  // empty: the claim ran (some routes may still have been refused)
        // When the claim was submitted; it took `seconds`.
        Clock::time_point started;
        double seconds = 0;
    };
    using Done = std::function<void(Round)>;

    // `look_again` runs on the loop when a round may find something it could not before:
    // a failed round's backoff is over, a limit lets a route go.
    Claimer(const boost::asio::any_io_executor& loop, RoundRunner& runner,
            NamespaceCache& namespaces, metrics::DatabaseMetrics& metrics, Settings settings,
            util::SteadyNow now, std::function<void()> look_again);

    void start() { runner_.prepare_apart(); }
    void stop();

    // --- what may have made rows due -------------------------------------------------
    // New rows in these (namespace, task_queue) pairs.
    void woken(const std::vector<QueueKey>& queues) { activity_.woken(queues, now_()); }
    // Rows may have become due on any route: the next round probes every inactive one.
    void look_everywhere() { activity_.look_everywhere(); }
    // Rows were put back in line behind where claims read on (re-arms, a resume): the next
    // round reads every route from the front, and probes the others.
    void read_from_front();
    // The owned ranges changed: count claims again and read from the front.
    void ranges_changed();
    // The poll backstop: backoffs that ended, scheduled rows, rows behind where claims read
    // on. Probes and reads from the front when that is due (paced).
    void backstop();
    // An outcome write landed: a full concurrency limit may have room.
    void slots_freed() { limits_.slots_freed(); }

    // --- rounds ------------------------------------------------------------------------
    // Whether a round may start now: not while a failed round's backoff runs, nor, when
    // claims may have committed unseen, while the claim apart in flight is (its rows must
    // be seen before the release of what nobody saw).
    [[nodiscard]] bool ready() const;
    // Plans a round over `routes` (those with free credit now) and runs it. `take_settled`
    // gives the rows per namespace the node's own outcome writes took out of `claimed` since
    // the last round; it is called only when a round starts. False when no route is worth a
    // claim now (nothing was started). `done` runs on the loop, at once when the round
    // cannot be queued.
    using SettledSource = std::function<std::map<std::string, std::int64_t>()>;
    bool round(store::Owner owner, std::vector<worker::Route> routes,
               const SettledSource& take_settled, const Done& done);
    [[nodiscard]] bool claiming() const { return claiming_; }

    // Whether woken `queues` could be claimed apart now: a round is in flight (without one,
    // the next round is as quick), no claim apart is, and some queue's namespace is not in
    // the round.
    [[nodiscard]] bool may_claim_apart(const std::vector<QueueKey>& queues) const;
    // Claims apart the routes (of `routes`, those with free credit now) of woken `queues`
    // that are idle; `done` runs as for round(). Returns the queues left to the rounds.
    std::vector<QueueKey> claim_apart(const std::vector<QueueKey>& queues, store::Owner owner,
                                      std::vector<worker::Route> routes, const Done& done);
    [[nodiscard]] bool claiming_apart() const { return apart_.running; }

private:
    // The namespaces in each claim, and the rows claimed apart since the last round.
    struct ApartBook {
        std::set<std::string> in_round;
        std::set<std::string> in_apart;
        std::map<std::string, std::int64_t> claimed;  // per namespace, for the next tally
        bool running = false;
    };

    void finish(Round& round);
    void finish_apart(Round& round);
    // The delivery controls of `names` that have any (for a claim request).
    [[nodiscard]] std::map<std::string, store::DeliveryControls> controls_of(
        const std::set<std::string>& names) const;

    RoundRunner& runner_;
    NamespaceCache& namespaces_;
    metrics::DatabaseMetrics& metrics_;
    Settings settings_;
    util::SteadyNow now_;
    // Used by one round at a time, on the lane; shared so that a round in flight outlives
    // the claimer safely.
    std::shared_ptr<ClaimerState> state_;
    RouteActivity activity_;
    ClaimLimits limits_;
    ClaimFaults faults_;
    ClaimMarks marks_;
    ApartBook apart_;
    bool claiming_ = false;
    std::function<void()> look_again_;
    // After a failed round, the sweep that follows its backoff.
    boost::asio::steady_timer retry_timer_;
    util::Lifetime lifetime_;
};

}  // namespace outboxd::dispatch
