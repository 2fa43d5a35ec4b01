#pragma once

// Schedules in PostgreSQL (table schedules, README "Schedules"): what the API sets and
// lists, and the owner's firing of those due. See OutboxSession for threads, errors and time.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "outboxd/store/outbox_row.hpp"
#include "outboxd/store/outbox_session.hpp"
#include "outboxd/store/shard_ranges.hpp"

namespace outboxd::store {

struct ScheduleSpec {
    std::string id;
    std::string cron;
    std::string timezone = "UTC";
    std::string namespace_name = "default";
    std::string task_queue = "default";
    std::string activity_type;
    std::optional<std::string> workflow_id;
    std::string input_json = "null";
    std::string catch_up = "one";
};

struct ScheduleRecord {
    ScheduleSpec spec;
    std::optional<TimePoint> next_fire_at;
    std::optional<TimePoint> last_fired_at;
    std::optional<std::string> last_error;
    TimePoint created_at;
    TimePoint updated_at;
    std::int32_t shard = 0;
};

struct FiredSchedules {
    std::int64_t schedules = 0;        // looked at
    std::int64_t staged = 0;           // rows staged
    std::vector<std::string> refused;  // ids whose cron or zone could not be used
};

class ScheduleStore {
public:
    explicit ScheduleStore(OutboxSession& session) : session_(session) {}

    // Creates or replaces a schedule. `spec` must have been checked (the API parser); a row
    // the table's CHECKs refuse throws ValidationError. A new schedule, or one whose cron or
    // time zone changed, fires first at its first firing after the database's now(); one
    // whose timing is unchanged keeps its next firing.
    void put(const ScheduleSpec& spec);
    std::optional<ScheduleRecord> get(std::string_view id);
    std::vector<ScheduleRecord> list();
    bool remove(std::string_view id);  // false: no such schedule

    // Stages the due firings of schedules on shards leased to `owner` (at most `limit`
    // schedules), each schedule's rows and its next firing in one transaction.
    FiredSchedules fire_due(const Owner& owner, std::int32_t limit);

private:
    OutboxSession& session_;
};

}  // namespace outboxd::store
