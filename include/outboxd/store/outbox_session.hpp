#pragma once

// One connection to the outbox tables, and the stores over it, each serving one consumer:
// ClaimStore (the claims lanes), OutcomeStore (the outcome and lease writers),
// MaintenanceStore (reconcile, retention, gauges), AdminStore (the HTTP API and the
// namespace cache), TargetStore (HTTP push targets) and ScheduleStore (schedules). A session
// prepares the statements of the stores it is opened for, and only those (see Uses); a
// lane opens one for its consumer's stores (store/db_lane.hpp).
//
// Thread affinity: a session and its stores are used by one thread at a time (libpqxx
// connections are single-threaded worlds). Run one per DB thread.
//
// Errors: every store method may throw UnavailableError (connection lost; the next call
// reconnects), ConflictError (transient; retry) or StoreError. Input a store refuses is a
// ValidationError thrown before anything changes. Expected outcomes are return values.
//
// Time: every instant that several nodes compare (visibility, claim age, lease expiry) is
// taken from the database clock inside the statement; callers pass durations, not instants.

#include <chrono>
#include <memory>
#include <string>

#include "outboxd/store/shard_ranges.hpp"

namespace outboxd::store {

class PgSession;

// Who is claiming and over which shards. A claim touches only rows whose shard is both in
// `ranges` and leased to `incarnation` in shard_leases with an unexpired lease (database
// clock, checked inside the claim statement). A node narrows `ranges` to stop claiming on a
// range before it hands the lease over.
struct Owner {
    std::string incarnation;
    ShardRanges ranges = ShardRanges::all();
};

class OutboxSession {
public:
    // Whether this session's commits wait for the WAL flush.
    enum class Commits {
        durable,  // every commit waits (synchronous_commit as the server has it)
        // Commits return before the flush: only for a session that claims and counts, never
        // stages or records outcomes. A claim lost in a database crash leaves its row
        // pending, to be claimed and delivered again (at least once); the answer to the
        // lost claim is then refused by the claim fence, as every connection of such a
        // session first moves the claim-token sequence past what the crash may have lost.
        relaxed,
    };

    // The stores a session serves, as bits: it prepares their statements.
    enum class Uses : unsigned {
        claims = 1U << 0U,
        outcomes = 1U << 1U,
        maintenance = 1U << 2U,
        admin = 1U << 3U,
        targets = 1U << 4U,
        schedules = 1U << 5U,
        access = 1U << 6U,  // credentials and the audit log
        all = (1U << 7U) - 1U,
    };

    // Connects lazily on first use; `database_url` is a libpq string or URI. A positive
    // `statement_timeout` bounds every statement on the server (a request must not hold its
    // lane for minutes). A store used over a session not opened for it fails its statements
    // ("prepared statement … does not exist").
    OutboxSession(const std::string& database_url, Uses uses, Commits commits = Commits::durable,
                  std::chrono::milliseconds statement_timeout = {});
    ~OutboxSession();
    OutboxSession(const OutboxSession&) = delete;
    OutboxSession& operator=(const OutboxSession&) = delete;

    // Connects (and prepares the statements) now if not connected, for a session whose first
    // statement must not wait for it. Errors as the stores'.
    void connect();
    // Closes the connection (an idle lane's); the next call connects again.
    void disconnect();

    // For the stores (internal to src/store).
    [[nodiscard]] PgSession& pg() { return *pg_; }

private:
    std::unique_ptr<PgSession> pg_;
};

[[nodiscard]] constexpr OutboxSession::Uses operator|(OutboxSession::Uses a,
                                                      OutboxSession::Uses b) {
    return static_cast<OutboxSession::Uses>(static_cast<unsigned>(a) | static_cast<unsigned>(b));
}
[[nodiscard]] constexpr bool uses(OutboxSession::Uses set, OutboxSession::Uses one) {
    return (static_cast<unsigned>(set) & static_cast<unsigned>(one)) != 0;
}

}  // namespace outboxd::store
