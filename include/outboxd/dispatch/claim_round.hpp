#pragma once

// One sweep's claims, run on a database lane: know the claimed count of every namespace
// with a route, plan the claims under quotas and fairness, then claim route by route (one
// statement each).
//
// The claimed counts come from a ClaimedTally carried from round to round: an upper bound
// of each namespace's claimed rows in the owned ranges, read from the database (one grouped
// query) and raised by every claim since. Rows only leave `claimed` by outcomes, and no one
// else claims in ranges we lease, so the bound holds until the ranges change. A round
// trusts it while it leaves every namespace more headroom than its routes can take, and
// counts again (then plans again) only when a ceiling would bind: the common round is one
// statement, and a namespace at its ceiling is judged by the durable count as before.

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "outboxd/dispatch/claim_cursor.hpp"
#include "outboxd/dispatch/claim_planner.hpp"
#include "outboxd/store/outbox_store.hpp"

namespace outboxd::dispatch {

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
    // Routes whose claim failed for a cause of their own: the round went on with the others.
    // With the error, for the log.
    std::vector<std::pair<store::ClaimScope, std::string>> refused;
};

// Upper bounds of claimed rows per namespace in `ranges`. Default-constructed: unknown,
// the next round counts. It is counted again whenever the claimer's ranges generation
// moves (see ClaimGenerations): ranges that went away and came back may hold another
// node's claims. Owned by one claimer; one round at a time.
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

// With `cursors`, each claim starts where its route's cursor says; without, every claim
// reads from the front. A lost connection or contention (store::UnavailableError,
// store::ConflictError) fails the round (rethrown); any other failure of a route's claim is
// that route's alone: it is reported in `refused` and the round goes on. `settled`: rows per namespace that the claimer's own outcome
// writes took out of `claimed` since the last round was submitted; they lower the tally,
// unless this round counts (the count already saw them). The claimer must also drop what
// landed while a round that counted was running.
ClaimRoundResult claim_round(store::OutboxStore& store, const store::Owner& owner,
                             const std::vector<worker::Route>& routes,
                             const std::function<std::int64_t(const std::string&)>& quota,
                             std::int32_t batch_size, std::size_t rotation, ClaimedTally& tally,
                             ClaimCursors* cursors = nullptr, ClaimGenerations generations = {},
                             const std::map<std::string, std::int64_t>& settled = {});

}  // namespace outboxd::dispatch
