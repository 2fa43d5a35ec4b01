#pragma once

// Value types of the outbox storage contract: what is staged, what a claim returns,
// how a claim is scoped and how an outcome is addressed. Plain data, no I/O.

#include <chrono>
#include <compare>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace outboxd::store {

using Clock = std::chrono::system_clock;
// Microseconds, as PostgreSQL keeps them: every timestamptz it can hold (4713 BC to
// 294276 AD) fits, where nanoseconds overflow outside 1677..2262.
using TimePoint = std::chrono::time_point<Clock, std::chrono::microseconds>;
[[nodiscard]] inline TimePoint now() {
    return std::chrono::time_point_cast<std::chrono::microseconds>(Clock::now());
}

// Bounds of a row's priority (higher first; 0 is the default).
inline constexpr std::int32_t kMinPriority = 0;
inline constexpr std::int32_t kMaxPriority = 100;

// Routing identity a row gets when the writer names none.
inline constexpr std::string_view kDefaultRoute = "default";

enum class Status { pending, claimed, done, failed, cancelled };

// Canonical lowercase token stored in the `status` column.
[[nodiscard]] std::string_view to_string(Status status) noexcept;
// Throws DecodeError naming the token when it is not one of the five.
[[nodiscard]] Status parse_status(std::string_view token);

// `workflow_id + ':' + ordinal`: the key the database fills in when a writer leaves it null.
[[nodiscard]] std::string dispatch_key_for(std::string_view workflow_id, std::int64_t ordinal);

// One row to stage. Optional fields take the table's defaults.
struct NewRow {
    std::string workflow_id;
    std::int64_t ordinal = 0;
    std::string activity_type;
    std::string input_json = "null";          // JSON text, handed to workers verbatim
    std::optional<std::string> dispatch_key;  // default: dispatch_key_for(workflow_id, ordinal)
    std::optional<std::string> run_id;
    std::string namespace_name{kDefaultRoute};
    std::string task_queue{kDefaultRoute};
    std::optional<std::string> node;
    std::optional<TimePoint> visible_after;  // default: the database's now()
    std::int32_t attempt = 0;   // finished attempts so far; only re-staging tools set it
    std::int32_t priority = 0;  // kMinPriority..kMaxPriority, higher first
    // W3C trace context (version 00 layout), as util::is_valid_traceparent accepts it.
    std::optional<std::string> traceparent;
};

// A row as the store reads it back.
struct OutboxRow {
    std::int64_t id = 0;
    std::string dispatch_key;
    std::string workflow_id;
    std::int64_t ordinal = 0;
    std::optional<std::string> run_id;
    std::string namespace_name;
    std::string task_queue;
    std::optional<std::string> node;
    std::string activity_type;
    std::string input_json;
    Status status = Status::pending;
    std::int32_t attempt = 0;
    TimePoint visible_after;
    std::optional<TimePoint> claimed_at;
    std::optional<std::string> claimed_by;
    std::int64_t claim_token = 0;  // 0 unless claimed
    std::optional<std::string> last_error;
    TimePoint created_at;
    std::optional<TimePoint> finished_at;
    std::int32_t shard = 0;
    std::int32_t priority = 0;
    // Pending, behind an earlier row of its workflow (ordered delivery): not claimed until
    // that row ends.
    bool waiting = false;
    std::optional<std::string> result_json;  // the done attempt's result (JSON text)
    std::optional<std::string> traceparent;
    // When a heartbeat of its task was last recorded, and the progress it last carried.
    std::optional<TimePoint> heartbeat_at;
    std::optional<std::string> progress_json;
    // Deliveries so far (claims that reached, or may have reached, a worker or endpoint); a
    // claimed row's count includes its current claim.
    std::int32_t deliveries = 0;
};

// A row's place in claim order: claims take due rows oldest visible_after first, id
// breaking ties.
struct ClaimPosition {
    TimePoint visible_after;
    std::int64_t id = 0;

    friend auto operator<=>(const ClaimPosition&, const ClaimPosition&) = default;
};

[[nodiscard]] inline ClaimPosition position_of(const OutboxRow& row) {
    return {row.visible_after, row.id};
}

// Restricts a claim to the rows one worker pool can run.
//
// `node` is the pool's node label, not an exact-match row filter: a row is in scope when
// it is unpinned (row.node empty) or pinned to this label. A pool without a label serves
// only unpinned rows. `activity_types` empty means any activity type. With
// `include_unpinned` false only rows pinned to `node` are in scope (namespace placement
// can reserve unpinned rows for other pools).
struct ClaimScope {
    std::string namespace_name{kDefaultRoute};
    std::string task_queue{kDefaultRoute};
    std::optional<std::string> node;
    std::vector<std::string> activity_types;  // empty: any
    // With no activity_types: types this scope leaves out (claimed apart, under the
    // namespace's per-type limits).
    std::vector<std::string> excluded_types{};
    bool include_unpinned = true;

    // The same predicate the claim SQL applies, for in-memory routing decisions.
    [[nodiscard]] bool admits(const OutboxRow& row) const;

    friend bool operator==(const ClaimScope&, const ClaimScope&) = default;
    friend auto operator<=>(const ClaimScope&, const ClaimScope&) = default;
};

// Identifies one claim of one row; outcome writes apply only while it still matches.
struct ClaimRef {
    std::int64_t id = 0;
    std::int64_t token = 0;

    friend bool operator==(const ClaimRef&, const ClaimRef&) = default;
};

// What happened to a claimed row.
struct Outcome {
    enum class Kind {
        done,     // -> done
        retry,    // -> pending, attempt + 1, visible after now() + delay (delay 0: due at
                  //    once, keeping its place in line)
        fail,     // -> failed (dead letter), attempt + 1
        release,  // -> pending, attempt unchanged, due at once in its place (never reached a
                  //    worker)
    };
    ClaimRef ref;
    Kind kind = Kind::done;
    std::chrono::milliseconds delay{0};  // retry only; 0 re-arms for immediate re-claim
    std::string error;                   // retry and fail: kept as last_error
    // The row's workflow when its end lets the workflow's next waiting row go (ordered
    // delivery); empty otherwise. With the row's task queue, for the node to claim its
    // route again once the write has landed (the store ignores it).
    std::string let_go_workflow;
    std::string let_go_task_queue;
    // done only: the result to keep (JSON text jsonb can hold); none: the row keeps none.
    std::optional<std::string> result_json;

    static Outcome done(ClaimRef ref, std::optional<std::string> result = std::nullopt) {
        return {ref, Kind::done, {}, {}, {}, {}, std::move(result)};
    }
    static Outcome retry(ClaimRef ref, std::chrono::milliseconds delay, std::string error) {
        return {ref, Kind::retry, delay, std::move(error), {}, {}, {}};
    }
    static Outcome fail(ClaimRef ref, std::string error) {
        return {ref, Kind::fail, {}, std::move(error), {}, {}, {}};
    }
    static Outcome release(ClaimRef ref) { return {ref, Kind::release, {}, {}, {}, {}, {}}; }
};

// Rows settled as cancelled (a workflow's cancel, or the sweep of cancelled workflows).
struct CancelledRows {
    std::vector<std::string> keys;  // sorted dispatch keys
    std::map<std::string, std::int64_t> by_namespace;
};

// Result of staging a batch.
struct AppendResult {
    std::size_t staged = 0;
    std::size_t duplicates = 0;
};

}  // namespace outboxd::store
