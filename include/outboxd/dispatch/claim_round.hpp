#pragma once

// One round's claims, run on the claims lane: probe the routes that may have become due,
// know the claimed count of every namespace with work, plan the claims under quotas and
// fairness, then claim: one statement for one route (the hot path of a single busy route),
// one statement for all of them otherwise.
//
// The claimed counts come from a ClaimedTally carried from round to round: an upper bound
// of each namespace's claimed rows in the owned ranges, read from the database (one grouped
// query) and raised by every claim since. Rows only leave `claimed` by outcomes, and no one
// else claims in ranges we lease, so the bound holds until the ranges change. A round
// trusts it while it leaves every namespace more headroom than its routes can take, and
// counts again (then plans again) only when a ceiling would bind: the common round is one
// statement, and a namespace at its ceiling is judged by the durable count as before.

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "outboxd/dispatch/claim_cursor.hpp"
#include "outboxd/dispatch/claim_limits.hpp"
#include "outboxd/dispatch/claim_planner.hpp"
#include "outboxd/dispatch/fair_share.hpp"
#include "outboxd/store/claim_store.hpp"

namespace outboxd::dispatch {

// Upper bounds of claimed rows per namespace in `ranges`. Default-constructed: unknown,
// the next round counts. It is counted again whenever the claimer's ranges generation
// moves (see ClaimGenerations): ranges that went away and came back may hold another
// node's claims.
struct ClaimedTally {
    store::ShardRanges ranges;
    std::map<std::string, std::int64_t> upper;
    std::uint64_t generation = 0;
    bool known = false;
};

// Counters the claimer raises between rounds. `front`: every route reads from the front
// once (see ClaimCursors). `ranges`: the owned ranges changed, so the tally counts again.
struct ClaimGenerations {
    std::uint64_t front = 0;
    std::uint64_t ranges = 0;
};

// What the claimer carries from round to round; used by one round at a time.
struct ClaimerState {
    explicit ClaimerState(std::chrono::milliseconds lookback) : cursors(lookback) {}
    ClaimedTally tally;
    ClaimCursors cursors;
    FairShare fair;
    RouteRotation rotation;
};

struct ClaimRequest {
    store::Owner owner;
    std::vector<worker::Route> routes;  // believed to have due rows: claimed
    std::vector<worker::Route> probe;   // may have: probed first, claimed if they do
    NamespaceNumber quota;
    NamespaceNumber weight;  // empty: 1 for all
    std::int32_t batch_size = 0;
    ClaimGenerations generations;
    // Rows per namespace that the claimer's own outcome writes took out of `claimed` since
    // the last round; they lower the tally, unless this round counts (the count saw them).
    // The claimer must also drop what landed while a round that counted was running.
    std::map<std::string, std::int64_t> settled;
    // Rows per namespace claimed apart from the rounds since the last round (claim_apart);
    // they raise the tally, unless this round counts.
    std::map<std::string, std::int64_t> claimed_apart;
    // The delivery controls of the namespaces of this round that have any (a snapshot).
    std::map<std::string, store::DeliveryControls> controls;
    // The limited parts held back now (ClaimLimits): the round's own copy.
    ClaimLimits::Parts parts;
};

struct ClaimRoundResult {
    std::vector<store::OutboxRow> rows;
    // Some route got every row it asked for: more are probably waiting.
    bool saturated = false;
    // The round read the claimed counts from the database.
    bool counted = false;
    // Some claim read the pending index from the front.
    bool from_front = false;
    // The highest claim token among `rows` (0: none).
    std::int64_t last_token = 0;
    // Probed routes that had due rows.
    std::vector<store::ClaimScope> found;
    // Claimed routes that got fewer rows than asked: nothing due is left in them.
    std::vector<store::ClaimScope> came_back_short;
    // Routes whose claim failed for a cause of their own: the round went on with the others.
    // With the error, for the log.
    std::vector<std::pair<store::ClaimScope, std::string>> refused;
    // Routes a limit held back (some rows left unclaimed for it): when it may let more go.
    // They still have due rows.
    std::vector<ClaimLimits::HeldRoute> held;
    // The request's parts, as the round left them.
    ClaimLimits::Parts parts;
};

// A failure of the database (store::TransientError: a lost connection, contention) fails
// the round (rethrown); any other failure of a route's claim is that route's alone: it is
// reported in `refused` and the round goes on.
ClaimRoundResult claim_round(store::ClaimStore& store, const ClaimRequest& request,
                             ClaimerState& state);

// A claim apart from the rounds, for routes that were idle and were just woken while a round
// is in flight (so that a quiet tenant does not wait for a busy one's rounds): counts the
// claimed rows of their namespaces, plans under the quotas without fairness state, and claims
// each from the front, up to `batch_size` rows in all. Touches none of the claimer's state:
// the caller keeps its namespaces out of every round meanwhile and hands the rows claimed
// to the next round (claimed_apart). Routes that filled their claim are listed in `found`
// (they have a backlog), the others in `came_back_short`; `counted` is set.
// Limits apply as in rounds (starting from no parts held: each claim apart asks the
// database).
ClaimRoundResult claim_apart(store::ClaimStore& store, const ClaimRequest& request);

}  // namespace outboxd::dispatch
