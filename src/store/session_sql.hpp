#pragma once

// Settings every new connection of an outbox session runs first. Internal to src/store.

#include <array>
#include <string_view>

namespace outboxd::store::sql {

// Claims and re-arms read a LIMIT off an ordered partial index. The planner can
// underestimate how many rows pass the filters and read the whole backlog and sort it
// instead; on the store's connections a sort is made a last resort. Set once per
// connection, so that a claim is one statement in one round trip.
// JIT is off too: short statements over partial indexes never gain what compiling costs
// (~30 ms), and a claim's cost estimate can pass jit_above_cost with a large backlog.
inline constexpr std::array<std::string_view, 2> kSessionSetup{"SET enable_sort = off",
                                                               "SET jit = off"};
// The same for a connection that only claims (OutboxSession::Commits::relaxed). Claim tokens
// come from a sequence, and a crash loses whatever its unflushed WAL handed out: the same
// tokens would be handed out again, and an answer to a lost claim would pass the fence of
// a new claim of the same row. So every new connection first moves the sequence past
// anything a lost WAL tail can hold, durably (txid_current() makes the commit wait for the
// flush), before its own commits stop waiting.
inline constexpr std::array<std::string_view, 4> kRelaxedSessionSetup{
    "SET enable_sort = off", "SET jit = off",
    "SELECT setval('outbox_claim_token_seq', nextval('outbox_claim_token_seq') + 1000000),"
    " txid_current()",
    "SET synchronous_commit = off"};

}  // namespace outboxd::store::sql
