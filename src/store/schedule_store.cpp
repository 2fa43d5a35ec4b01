#include "outboxd/store/schedule_store.hpp"

#include <spdlog/spdlog.h>

#include "outboxd/schedule/firings.hpp"
#include "outboxd/store/store_error.hpp"
#include "outboxd/util/untrusted_text.hpp"
#include "pg_codec.hpp"
#include "pg_session.hpp"
#include "row_codec.hpp"
#include "schedule_sql.hpp"

namespace outboxd::store {

using namespace codec;

namespace {

using std::chrono::sys_seconds;

constexpr int kScheduleColumns = 15;

ScheduleRecord decode_schedule(const pqxx::row& r) {
    ScheduleRecord record;
    auto& s = record.spec;
    s.id = r[0].as<std::string>();
    s.cron = r[1].as<std::string>();
    s.timezone = r[2].as<std::string>();
    s.namespace_name = r[3].as<std::string>();
    s.task_queue = r[4].as<std::string>();
    s.activity_type = r[5].as<std::string>();
    s.workflow_id = pg::optional_text(r[6]);
    s.input_json = r[7].as<std::string>();
    s.catch_up = r[8].as<std::string>();
    record.next_fire_at = pg::optional_instant(r[9]);
    record.last_fired_at = pg::optional_instant(r[10]);
    record.last_error = pg::optional_text(r[11]);
    record.created_at = pg::from_micros(r[12].as<std::int64_t>());
    record.updated_at = pg::from_micros(r[13].as<std::int64_t>());
    record.shard = r[14].as<std::int32_t>();
    return record;
}

sys_seconds seconds_of(TimePoint instant) {
    return std::chrono::floor<std::chrono::seconds>(
        std::chrono::sys_time<std::chrono::microseconds>{instant.time_since_epoch()});
}

std::int64_t micros_of(sys_seconds instant) {
    return std::chrono::duration_cast<std::chrono::microseconds>(instant.time_since_epoch())
        .count();
}

// "2026-12-02T06:15:00Z": the firing's part of its dispatch key.
std::string fire_text(sys_seconds instant) {
    const auto day = std::chrono::floor<std::chrono::days>(instant);
    const std::chrono::year_month_day ymd{day};
    const std::chrono::hh_mm_ss time{instant - day};
    char text[32];
    std::snprintf(text, sizeof text, "%04d-%02u-%02uT%02ld:%02ld:%02ldZ", int(ymd.year()),
                  unsigned(ymd.month()), unsigned(ymd.day()), long(time.hours().count()),
                  long(time.minutes().count()), long(time.seconds().count()));
    return text;
}

// The row's cron and zone, parsed; or why not (a row written by plain SQL).
struct Timing {
    std::optional<schedule::CronExpr> expr;
    const date::time_zone* zone = nullptr;
    schedule::CatchUp catch_up = schedule::CatchUp::one;
    std::string error;
};

Timing timing_of(const ScheduleSpec& spec) {
    Timing timing;
    timing.expr = schedule::parse_cron(spec.cron, timing.error);
    if (!timing.expr) return timing;
    timing.zone = schedule::find_time_zone(spec.timezone, timing.error);
    if (!timing.zone) timing.expr.reset();
    if (!schedule::parse_catch_up(spec.catch_up, timing.catch_up)) {
        timing.expr.reset();
        timing.error = "unknown catch_up '" + spec.catch_up + "'";
    }
    return timing;
}

}  // namespace

void ScheduleStore::put(const ScheduleSpec& spec) {
    const auto timing = timing_of(spec);
    if (!timing.expr) throw ValidationError("schedule '" + spec.id + "': " + timing.error);
    session_.pg().transact(sql::kPutSchedule, [&](pqxx::work& tx) {
        const auto now =
            tx.exec_prepared1(std::string{sql::kScheduleNow.name})[0].as<std::int64_t>();
        const auto first =
            schedule::next_fire(*timing.expr, *timing.zone, seconds_of(pg::from_micros(now)));
        const std::optional<std::int64_t> first_us =
            first ? std::optional<std::int64_t>{micros_of(*first)} : std::nullopt;
        tx.exec_prepared(std::string{sql::kPutSchedule.name}, text_param(spec.id),
                         text_param(spec.cron), text_param(spec.timezone),
                         text_param(spec.namespace_name), text_param(spec.task_queue),
                         text_param(spec.activity_type), spec.workflow_id, spec.input_json,
                         text_param(spec.catch_up), first_us);
    });
}

std::optional<ScheduleRecord> ScheduleStore::get(std::string_view id) {
    return session_.pg().transact(
        sql::kGetSchedule, [&](pqxx::work& tx) -> std::optional<ScheduleRecord> {
            const auto result =
                tx.exec_prepared(std::string{sql::kGetSchedule.name}, text_param(id));
            if (result.empty()) return std::nullopt;
            return decode_schedule(result[0]);
        });
}

std::vector<ScheduleRecord> ScheduleStore::list() {
    return session_.pg().transact(sql::kListSchedules, [&](pqxx::work& tx) {
        std::vector<ScheduleRecord> out;
        for (const auto& r : tx.exec_prepared(std::string{sql::kListSchedules.name})) {
            out.push_back(decode_schedule(r));
        }
        return out;
    });
}

bool ScheduleStore::remove(std::string_view id) {
    return session_.pg().transact(sql::kDeleteSchedule, [&](pqxx::work& tx) {
        return !tx.exec_prepared(std::string{sql::kDeleteSchedule.name}, text_param(id)).empty();
    });
}

FiredSchedules ScheduleStore::fire_due(const Owner& owner, std::int32_t limit) {
    if (limit <= 0 || owner.ranges.empty()) return {};
    const bool any_due = session_.pg().autocommit(sql::kAnyDueSchedule, [](auto& tx) {
        return tx.exec_prepared1(std::string{sql::kAnyDueSchedule.name})[0].template as<bool>();
    });
    if (!any_due) return {};
    return session_.pg().transact(sql::kDueSchedules, [&](pqxx::work& tx) {
        FiredSchedules fired;
        pg::ArrayLiteral keys, workflows, ordinals, namespaces, queues, types, inputs;
        const auto due = tx.exec_prepared(std::string{sql::kDueSchedules.name}, owner.incarnation,
                                          owner.ranges.to_multirange(), limit);
        for (const auto& r : due) {
            const auto record = decode_schedule(r);
            const auto now = seconds_of(pg::from_micros(r[kScheduleColumns].as<std::int64_t>()));
            ++fired.schedules;
            const auto& spec = record.spec;
            const auto timing = timing_of(spec);
            if (!timing.expr) {
                // Its next firing stays (another node, or this one with its tz database
                // updated, may use it); tried again a minute later, not in a loop.
                fired.refused.push_back(spec.id);
                tx.exec_prepared(std::string{sql::kRefuseSchedule.name}, text_param(spec.id),
                                 util::sanitize_text(timing.error, 1000));
                continue;
            }
            const auto plan = schedule::due_firings(*timing.expr, *timing.zone, timing.catch_up,
                                                    seconds_of(*record.next_fire_at), now);
            for (const auto at : plan.stage) {
                const auto key = "schedule:" + spec.id + ":" + fire_text(at);
                keys.add(key);
                workflows.add(spec.workflow_id);
                ordinals.add(static_cast<std::int64_t>(at.time_since_epoch().count()));
                namespaces.add(spec.namespace_name);
                queues.add(spec.task_queue);
                types.add(spec.activity_type);
                inputs.add(spec.input_json);
                ++fired.staged;
            }
            std::optional<std::int64_t> next;
            if (plan.next) next = micros_of(*plan.next);
            tx.exec_prepared(std::string{sql::kAdvanceSchedule.name}, text_param(spec.id), next,
                             !plan.stage.empty());
        }
        if (fired.staged > 0) {
            tx.exec_prepared(std::string{sql::kStageFirings.name}, keys.str(), workflows.str(),
                             ordinals.str(), namespaces.str(), queues.str(), types.str(),
                             inputs.str());
        }
        return fired;
    });
}

}  // namespace outboxd::store
