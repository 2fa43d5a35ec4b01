#pragma once

// The schedule store's statements (README, "Schedules"): the API's changes and listings,
// and the firing of due schedules by maintenance. Internal to src/store.

#include <array>

#include "pg_codec.hpp"
#include "pg_session.hpp"

namespace outboxd::store::sql {

// clang-format off

#define OUTBOXD_SCHEDULE_COLUMNS                                                           \
    "id, cron, timezone, namespace, task_queue, activity_type, workflow_id, input::text,"  \
    " catch_up, " OUTBOXD_SQL_MICROS("next_fire_at") ", " OUTBOXD_SQL_MICROS("last_fired_at") \
    ", last_error, " OUTBOXD_SQL_MICROS("created_at") ", " OUTBOXD_SQL_MICROS("updated_at")   \
    ", shard"

inline constexpr Statement kScheduleNow{"schedule_now",
    "SELECT " OUTBOXD_SQL_MICROS("now()")};

// $10: the first firing after now (µs; NULL: never), used unless the timing is unchanged.
inline constexpr Statement kPutSchedule{"schedule_put",
    "INSERT INTO schedules AS s (id, cron, timezone, namespace, task_queue, activity_type,"
    "   workflow_id, input, catch_up, next_fire_at)"
    " VALUES ($1, $2, $3, $4, $5, $6, $7, $8::jsonb, $9, " OUTBOXD_SQL_INSTANT("$10::bigint") ")"
    " ON CONFLICT (id) DO UPDATE SET cron = EXCLUDED.cron, timezone = EXCLUDED.timezone,"
    "   namespace = EXCLUDED.namespace, task_queue = EXCLUDED.task_queue,"
    "   activity_type = EXCLUDED.activity_type, workflow_id = EXCLUDED.workflow_id,"
    "   input = EXCLUDED.input, catch_up = EXCLUDED.catch_up,"
    "   next_fire_at = CASE WHEN s.cron = EXCLUDED.cron AND s.timezone = EXCLUDED.timezone"
    "                       AND s.last_error IS NULL"
    "                  THEN s.next_fire_at ELSE EXCLUDED.next_fire_at END,"
    "   last_error = NULL, updated_at = now()"};

inline constexpr Statement kGetSchedule{"schedule_get",
    "SELECT " OUTBOXD_SCHEDULE_COLUMNS " FROM schedules WHERE id = $1"};
inline constexpr Statement kListSchedules{"schedule_list",
    "SELECT " OUTBOXD_SCHEDULE_COLUMNS " FROM schedules ORDER BY id LIMIT 10000"};
inline constexpr Statement kDeleteSchedule{"schedule_delete",
    "DELETE FROM schedules WHERE id = $1 RETURNING id"};

// $1 owner, $2 ranges, $3 limit: due schedules on shards leased to the owner, locked, with
// the database's now() (µs) last.
inline constexpr Statement kDueSchedules{"schedule_due",
    "WITH " OUTBOXD_LEASED_SHARDS
    " SELECT " OUTBOXD_SCHEDULE_COLUMNS ", " OUTBOXD_SQL_MICROS("now()")
    " FROM schedules s WHERE s.next_fire_at <= now() AND s.shard <@ (SELECT shards FROM leased)"
    // A row refused (its cron or zone unusable here) is tried again a minute later.
    "   AND (s.last_error IS NULL OR s.updated_at < now() - interval '1 minute')"
    " ORDER BY s.next_fire_at LIMIT $3 FOR UPDATE OF s SKIP LOCKED"};

// Whether any schedule is due anywhere (a superset of kDueSchedules' rows): one probe of
// schedules_due_idx, so that a database without due schedules pays no transaction a second.
inline constexpr Statement kAnyDueSchedule{"schedule_any_due",
    "SELECT EXISTS (SELECT 1 FROM schedules s WHERE s.next_fire_at <= now()"
    "   AND (s.last_error IS NULL OR s.updated_at < now() - interval '1 minute'))"};

// One row per firing, due at once; a key staged before is left alone.
inline constexpr Statement kStageFirings{"schedule_stage", R"SQL(
INSERT INTO outbox (dispatch_key, workflow_id, ordinal, namespace, task_queue, activity_type,
                    input)
SELECT t.key, coalesce(t.workflow, t.key), t.ordinal, t.ns, t.tq, t.type, t.input::jsonb
FROM unnest($1::text[], $2::text[], $3::bigint[], $4::text[], $5::text[], $6::text[],
            $7::text[]) AS t(key, workflow, ordinal, ns, tq, type, input)
ON CONFLICT (dispatch_key) DO NOTHING)SQL"};

// $2: the next firing (µs; NULL: never), $3 whether this call staged any.
inline constexpr Statement kAdvanceSchedule{"schedule_advance",
    "UPDATE schedules SET next_fire_at = " OUTBOXD_SQL_INSTANT("$2::bigint") ","
    " last_fired_at = CASE WHEN $3 THEN now() ELSE last_fired_at END, last_error = NULL"
    " WHERE id = $1"};
// $2 why the row could not be used here: its next firing stays, tried again later.
inline constexpr Statement kRefuseSchedule{"schedule_refuse",
    "UPDATE schedules SET last_error = $2, updated_at = now() WHERE id = $1"};

// Every statement ScheduleStore runs.
inline constexpr std::array kScheduleStatements{
    kScheduleNow, kPutSchedule, kGetSchedule, kListSchedules, kDeleteSchedule, kAnyDueSchedule,
    kDueSchedules, kStageFirings, kAdvanceSchedule, kRefuseSchedule};

// clang-format on

}  // namespace outboxd::store::sql
