#pragma once

// The outbox storage contract on PostgreSQL.
//
// Thread affinity: an OutboxStore owns one database connection and is used by one thread
// at a time (libpqxx connections are single-threaded worlds). Run one per DB thread.
//
// Errors: every method may throw UnavailableError (connection lost; the next call
// reconnects), ConflictError (transient; retry) or StoreError. Input the store refuses is a
// ValidationError thrown before anything changes. Expected outcomes are return values.
//
// Time: every instant that several nodes compare (visibility, claim age, lease expiry) is
// taken from the database clock inside the statement; callers pass durations, not instants.

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "outboxd/store/outbox_row.hpp"
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

struct DeadLetter {
    std::string dispatch_key;
    std::string workflow_id;
    std::string namespace_name;
    std::string task_queue;
    std::string activity_type;
    std::int32_t attempt = 0;
    std::optional<std::string> last_error;
    std::optional<TimePoint> failed_at;
};

// Bounds of a namespace's weight.
inline constexpr std::int32_t kMinWeight = 1;
inline constexpr std::int32_t kMaxWeight = 1000;

// A namespace's tenant settings; absent fields take the platform defaults.
struct NamespaceSettings {
    std::string name;
    std::optional<std::int32_t> max_in_flight;
    std::string placement_mode = "unplaced";  // unplaced | prefer | pinned
    std::vector<std::string> placement_nodes;
    std::int32_t weight = 1;  // its share of each claim round, against other namespaces' (1..1000)

    friend bool operator==(const NamespaceSettings&, const NamespaceSettings&) = default;
};

class OutboxStore {
public:
    // Whether this store's commits wait for the WAL flush.
    enum class Commits {
        durable,  // every commit waits (synchronous_commit as the server has it)
        // Commits return before the flush: only for a store that claims and counts, never
        // stages or records outcomes. A claim lost in a database crash leaves its row
        // pending, to be claimed and delivered again (at least once); the answer to the
        // lost claim is then refused by the claim fence, as every connection of such a
        // store first moves the claim-token sequence past what the crash may have lost.
        relaxed,
    };

    // Connects lazily on first use; `database_url` is a libpq string or URI. A positive
    // `statement_timeout` bounds every statement on the server (a request must not hold its
    // lane for minutes).
    explicit OutboxStore(std::string database_url, Commits commits = Commits::durable,
                         std::chrono::milliseconds statement_timeout = std::chrono::milliseconds{
                             0});
    ~OutboxStore();
    OutboxStore(const OutboxStore&) = delete;
    OutboxStore& operator=(const OutboxStore&) = delete;

    // --- staging ---------------------------------------------------------------------
    // Stages `rows` in one statement; rows whose dispatch_key exists are duplicates and
    // change nothing. Atomic: a row that fails validation rejects the whole batch with a
    // ValidationError naming its index.
    AppendResult append(std::span<const NewRow> rows);

    // --- claims (one round trip each) -------------------------------------------------
    // Claims up to `limit` due pending rows of any route, oldest visible_after first.
    std::vector<OutboxRow> claim(const Owner& owner, std::int32_t limit);
    // Claims up to `limit` due pending rows inside `scope`; with `after`, only rows
    // past that position in claim order (visible_after, id): the index scan starts there
    // instead of stepping over every row claimed before it (see ClaimCursor).
    std::vector<OutboxRow> claim_scoped(const Owner& owner, const ClaimScope& scope,
                                        std::int32_t limit,
                                        std::optional<ClaimPosition> after = std::nullopt);
    // Both skip rows of paused workflows inside the statement, so held rows never take
    // a slot of the LIMIT.

    // Claims of several routes in one statement: each claim takes up to its limit of due rows
    // in its scope (after its position, when set). Returns, per claim (same order), its rows
    // in claim order.
    struct RouteClaim {
        ClaimScope scope;
        std::int32_t limit = 0;
        std::optional<ClaimPosition> after;
    };
    std::vector<std::vector<OutboxRow>> claim_routes(const Owner& owner,
                                                     std::span<const RouteClaim> claims);
    // Which of `scopes` have a row a claim would take now on the owner's leased shards (one
    // index probe each). Returns their indices, ascending.
    std::vector<std::size_t> routes_with_due_rows(const Owner& owner,
                                                  std::span<const ClaimScope> scopes);

    // --- outcomes (fenced by the claim) -----------------------------------------------
    // Applies each outcome only if its row is still claimed under the same claim token.
    // Returns, per input, whether it applied (false: stale, re-armed, cancelled or gone).
    std::vector<bool> record_outcomes(std::span<const Outcome> outcomes);
    bool complete(ClaimRef ref);
    bool retry(ClaimRef ref, std::chrono::milliseconds delay, std::string_view error);
    bool fail(ClaimRef ref, std::string_view error);

    // --- reconciliation ---------------------------------------------------------------
    // Claimed rows in `ranges` claimed more than `older_than` ago, oldest first. Read-only.
    std::vector<OutboxRow> list_stale_claimed(const ShardRanges& ranges,
                                              std::chrono::milliseconds older_than,
                                              std::int32_t limit);
    // Re-arms exactly those rows (on shards leased to `owner`) to pending, due at once and in
    // their old place in line (visible_after kept, it is past), attempt preserved, claim
    // cleared. Returns the re-armed rows.
    std::vector<OutboxRow> rearm_stale_claimed(const Owner& owner,
                                               std::chrono::milliseconds older_than,
                                               std::int32_t limit);
    // Hands back (pending, attempt unchanged, in its place in line) every row claimed by
    // `owner`'s incarnation under a token above `token`: after a claim statement failed
    // with its outcome unknown, the rows it may have claimed, which the claimer never saw.
    // Only while the claimer runs no other claim. Returns how many rows it released.
    std::int64_t release_claims_after(const Owner& owner, std::int64_t token);
    // Re-arms rows on the owner's leased shards claimed by an incarnation that has no live
    // heartbeat (younger than `liveness`) in dispatcher_nodes. Attempt preserved.
    std::vector<OutboxRow> rearm_orphaned(const Owner& owner, std::chrono::milliseconds liveness,
                                          std::int32_t limit);
    // Workflow ids with a pending or claimed row in `ranges`.
    std::vector<std::string> list_unsettled_workflow_ids(const ShardRanges& ranges);
    // Settles every pending or claimed row of the workflow to cancelled and remembers the
    // cancel, so rows staged for it later are cancelled too; returns the settled keys.
    std::vector<std::string> cancel_workflow(std::string_view workflow_id);
    struct Cancelled {
        std::vector<std::string> keys;  // sorted
        std::map<std::string, std::int64_t> by_namespace;
    };
    Cancelled cancel_workflow_counted(std::string_view workflow_id);
    // Settles live rows of cancelled workflows on shards leased to `owner` (boot, takeover,
    // and rows staged after the cancel).
    Cancelled settle_cancelled(const Owner& owner);

    // --- counts and probes (scoped to `ranges`) ----------------------------------------
    std::int64_t count_inflight(std::string_view namespace_name, const ShardRanges& ranges);
    std::int64_t count_claimed(std::string_view namespace_name, const ShardRanges& ranges);
    // One grouped query; exactly one entry per requested namespace (0 when none).
    std::map<std::string, std::int64_t> count_claimed_by_namespace(
        std::span<const std::string> namespaces, const ShardRanges& ranges);
    // Both counts for every namespace with live rows, in one grouped query.
    struct NamespaceCounts {
        std::int64_t inflight = 0;
        std::int64_t claimed = 0;
    };
    std::map<std::string, NamespaceCounts> count_live_by_namespace(const ShardRanges& ranges);
    // Distinct (namespace, task_queue, node) of due pending rows; activity_types empty.
    std::vector<ClaimScope> pending_routes(const ShardRanges& ranges);

    // --- lookups ----------------------------------------------------------------------
    std::optional<OutboxRow> find(std::string_view dispatch_key);

    // --- tenant controls --------------------------------------------------------------
    // Returns false when the workflow was already paused / not paused.
    bool pause_workflow(std::string_view workflow_id);
    bool resume_workflow(std::string_view workflow_id);
    bool is_paused(std::string_view workflow_id);
    std::vector<DeadLetter> list_dead_letters(std::optional<std::string_view> namespace_name,
                                              std::int32_t limit);
    // failed -> pending, attempt 0, visible now. False when the key is not a dead letter.
    bool requeue_dead_letter(std::string_view dispatch_key);

    // Creates or replaces a namespace's settings. ValidationError for an unknown mode, a
    // non-positive quota, or prefer/pinned without nodes.
    void put_namespace(const NamespaceSettings& settings);
    std::optional<NamespaceSettings> get_namespace(std::string_view name);
    std::vector<NamespaceSettings> list_namespaces();

    // --- retention --------------------------------------------------------------------
    // Deletes up to `limit` rows finished more than `older_than` ago; returns how many.
    std::int64_t delete_finished(std::chrono::milliseconds older_than, std::int32_t limit);

private:
    std::unique_ptr<PgSession> session_;
};

}  // namespace outboxd::store
