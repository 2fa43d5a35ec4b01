#pragma once

// What the HTTP API (and the namespace cache) does with the outbox: stage rows, look them
// up, the tenant controls (pause, resume, cancel, dead letters) and namespace settings. See
// OutboxSession for threads, errors and time.

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "outboxd/store/delivery_controls.hpp"
#include "outboxd/store/outbox_row.hpp"
#include "outboxd/store/outbox_session.hpp"
#include "outboxd/store/placement.hpp"

namespace outboxd::store {

struct DeadLetter {
    std::string dispatch_key;
    std::string workflow_id;
    std::string namespace_name;
    std::string task_queue;
    std::string activity_type;
    std::int32_t attempt = 0;
    std::optional<std::string> last_error;
    std::optional<TimePoint> failed_at;
    std::int64_t id = 0;  // with failed_at, its place in the list (a page's cursor)
};

// Which dead letters an operation applies to; unset fields match any.
struct DeadLetterFilter {
    std::optional<std::string> namespace_name;
    // Only these namespaces (those a credential may reach); none: any.
    std::optional<std::vector<std::string>> within_namespaces;
    std::optional<std::string> activity_type;
    std::optional<std::string> error_contains;  // a substring of last_error
    std::optional<std::int64_t> older_than_s;   // failed at least this long ago (database clock)
};

// Where a page of dead letters ended: the next page starts after it.
struct DeadLetterCursor {
    TimePoint failed_at;
    std::int64_t id = 0;
};

// The most rows one bulk requeue or purge touches.
inline constexpr std::int32_t kMaxBulkRows = 10000;

// Bounds of a namespace's weight.
inline constexpr std::int32_t kMinWeight = 1;
inline constexpr std::int32_t kMaxWeight = 1000;

// A namespace's tenant settings; absent fields take the platform defaults.
struct NamespaceSettings {
    std::string name;
    std::optional<std::int32_t> max_in_flight;
    Placement placement;
    std::int32_t weight = 1;  // its share of each claim round, against other namespaces' (1..1000)
    DeliveryControls controls;
    bool keep_results = true;  // whether its rows' results are stored

    friend bool operator==(const NamespaceSettings&, const NamespaceSettings&) = default;
};

// A namespace's rows now, cluster-wide (GET /v1/namespaces, the console).
struct NamespaceCounts {
    std::string namespace_name;
    std::int64_t pending = 0;
    std::int64_t claimed = 0;
    std::int64_t dead_letters = 0;
    // Rows that reached each end in the last minute, by the database's clock.
    std::int64_t done_last_minute = 0;
    std::int64_t failed_last_minute = 0;
    std::int64_t cancelled_last_minute = 0;
};

// The most namespaces one summary lists.
inline constexpr std::int32_t kMaxNamespaceSummaries = 10000;

// Whether a workflow is paused or cancelled now.
struct WorkflowFlags {
    bool paused = false;
    bool cancelled = false;
};

class AdminStore {
public:
    explicit AdminStore(OutboxSession& session) : session_(session) {}

    // Stages `rows` in one statement; rows whose dispatch_key exists are duplicates and
    // change nothing. Atomic: a row that fails validation rejects the whole batch with a
    // ValidationError naming its index.
    AppendResult append(std::span<const NewRow> rows);
    std::optional<OutboxRow> find(std::string_view dispatch_key);
    // The workflow's pending, claimed and dead-lettered rows in (ordinal, id) order, at most
    // `limit`.
    std::vector<OutboxRow> workflow_rows(std::string_view workflow_id, std::int32_t limit);
    // Every row of the workflow, finished ones too, in (ordinal, id) order, at most `limit`.
    // No index covers finished rows by workflow: this reads the table (a look, not a poll).
    std::vector<OutboxRow> all_workflow_rows(std::string_view workflow_id, std::int32_t limit);
    // The namespaces `workflow_id`'s rows are in.
    std::vector<std::string> workflow_namespaces(std::string_view workflow_id);
    WorkflowFlags workflow_flags(std::string_view workflow_id);

    // Returns false when the workflow was already paused / not paused.
    bool pause_workflow(std::string_view workflow_id);
    bool resume_workflow(std::string_view workflow_id);
    // Settles every pending or claimed row of the workflow to cancelled and remembers the
    // cancel, so rows staged for it later are cancelled too.
    CancelledRows cancel_workflow(std::string_view workflow_id);
    // Forgets the cancel: rows staged for the workflow from now on run (cancelled rows stay
    // cancelled). False when the workflow was not cancelled.
    bool uncancel_workflow(std::string_view workflow_id);
    // Newest first, at most `limit`, after `after` (the last of the previous page).
    std::vector<DeadLetter> list_dead_letters(const DeadLetterFilter& filter, std::int32_t limit,
                                              std::optional<DeadLetterCursor> after = {});
    // The dead letters matching `filter`, at most `limit` (1..kMaxBulkRows), oldest first:
    // requeued (as requeue_dead_letter) or deleted. Returns how many.
    std::int64_t requeue_dead_letters(const DeadLetterFilter& filter, std::int32_t limit);
    std::int64_t purge_dead_letters(const DeadLetterFilter& filter, std::int32_t limit);
    // failed -> pending, attempt 0, visible now. False when the key is not a dead letter.
    bool requeue_dead_letter(std::string_view dispatch_key);

    // Creates or replaces a namespace's settings. ValidationError for a non-positive quota,
    // prefer/pinned without nodes, an empty node name or a weight out of bounds.
    void put_namespace(const NamespaceSettings& settings);
    std::optional<NamespaceSettings> get_namespace(std::string_view name);
    std::vector<NamespaceSettings> list_namespaces();
    // Every namespace with settings, live or dead-lettered rows, or rows finished in the last
    // minute, by name, at most kMaxNamespaceSummaries. Counts the live rows: its cost grows
    // with the backlog (an index scan of the live rows), not with the history.
    std::vector<NamespaceCounts> namespace_counts();

private:
    OutboxSession& session_;
};

}  // namespace outboxd::store
