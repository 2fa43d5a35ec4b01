#include "outboxd/dispatch/maintenance.hpp"

#include <algorithm>

#include <spdlog/spdlog.h>

#include "outboxd/util/untrusted_text.hpp"

namespace outboxd::dispatch {
namespace {

constexpr std::int32_t kReconcileBatch = 1000;
// Due schedules fired per reconcile, at most.
constexpr std::int32_t kScheduleBatch = 100;
constexpr std::int32_t kRetentionBatch = 5000;

struct Reconciled {
    std::size_t rearmed = 0;
    std::int64_t let_go = 0;  // waiting rows
    bool released_unordered = false;
    std::map<std::string, std::int64_t> cancelled;  // rows settled, by namespace
    store::FiredSchedules fired;                    // schedules' firings staged
    std::string schedule_error;                     // why firing them failed, if it did
    Maintenance::Clock::duration took{};
};

struct Counted {
    std::map<std::string, std::pair<double, double>> counts;  // inflight, claimed
    std::map<std::string, double> blocked;                    // workflows, by namespace
    Maintenance::Clock::duration took{};
};

}  // namespace

Maintenance::Maintenance(boost::asio::any_io_executor loop, store::MaintenanceLane& lane,
                         metrics::NodeMetrics& metrics, Settings settings, OwnerSource owner,
                         OrderedSource ordered, std::function<void(std::size_t)> rearmed)
    : loop_(std::move(loop)),
      lane_(lane),
      metrics_(metrics),
      settings_(settings),
      owner_(std::move(owner)),
      ordered_(std::move(ordered)),
      rearmed_(std::move(rearmed)),
      reconcile_timer_(
          loop_, settings.reconcile_interval,
          [this] {
              if (Clock::now() >= reconcile_rest_until_) reconcile();
          },
          metrics.fault("timer")),
      retention_timer_(
          loop_, settings.retention_interval, [this] { apply_retention(); },
          metrics.fault("timer")),
      gauge_timer_(
          loop_, settings.gauge_interval,
          [this] {
              if (Clock::now() >= gauges_rest_until_) refresh_gauges();
          },
          metrics.fault("timer")) {}

void Maintenance::start() {
    reconcile_timer_.start();
    retention_timer_.start();
    gauge_timer_.start();
}

void Maintenance::stop() {
    reconcile_timer_.stop();
    retention_timer_.stop();
    gauge_timer_.stop();
}

void Maintenance::reconcile() {
    if (reconciling_ || reconcile_paused_) return;
    auto owner = owner_();
    if (owner.ranges.empty()) return;
    reconciling_ = true;
    auto ordered = ordered_();
    const bool known = ordered.has_value();
    if (!known) ordered.emplace();
    std::vector<std::string> all_ordered = ordered->skip;
    all_ordered.insert(all_ordered.end(), ordered->block.begin(), ordered->block.end());
    std::sort(all_ordered.begin(), all_ordered.end());
    // A namespace that left ordering may have rows waiting still.
    if (known && !std::includes(all_ordered.begin(), all_ordered.end(), last_ordered_.begin(),
                                last_ordered_.end())) {
        release_unordered_ = true;
    }
    if (known) last_ordered_ = all_ordered;
    const bool queued = lane_.call(
        loop_, lifetime_.watch(),
        [owner = std::move(owner), liveness = settings_.liveness, stale = settings_.stale,
         stale_grace = settings_.stale_grace, skip = std::move(ordered->skip),
         all_ordered = std::move(all_ordered),
         release_unordered = known && release_unordered_](store::MaintenanceStores& db) {
            const auto started = Clock::now();
            Reconciled done;
            // Claims of incarnations that are gone: at once, not after a long timeout.
            done.rearmed += db.maintenance.rearm_orphaned(owner, liveness, kReconcileBatch).size();
            // Backstop: anything claimed far longer than a task may take, whoever holds it.
            done.rearmed +=
                db.maintenance.rearm_stale_claimed(owner, stale, kReconcileBatch, stale_grace)
                    .size();
            // Rows of cancelled workflows staged after the cancel, or left by a dead node.
            auto cancelled = db.maintenance.settle_cancelled(owner);
            if (!cancelled.keys.empty()) {
                spdlog::info("event=cancelled_rows_settled count={}", cancelled.keys.size());
            }
            done.cancelled = std::move(cancelled.by_namespace);
            // Waiting rows whose earlier rows ended while the claim that parked them ran.
            done.let_go =
                db.maintenance.let_go_waiting(owner.ranges, all_ordered, skip, kReconcileBatch);
            if (release_unordered) {
                const auto released =
                    db.maintenance.release_unordered(owner.ranges, all_ordered, kReconcileBatch);
                done.released_unordered = released < kReconcileBatch;
                done.let_go += released;
            }
            // Due firings of schedules on the owned shards (README, "Schedules"); a failure
            // here is reported apart, the rest of the reconcile stands.
            try {
                done.fired = db.schedules.fire_due(owner, kScheduleBatch);
            } catch (const std::exception& error) {
                done.schedule_error = error.what();
            }
            done.took = Clock::now() - started;
            return done;
        },
        [this, started = Clock::now()](store::LaneResult<Reconciled> done) {
            reconciling_ = false;
            const auto took = done.ok() ? done.value.took : Clock::now() - started;
            reconcile_rest_until_ = Clock::now() + 19 * took;
            result("reconcile", done.error);
            if (done.value.released_unordered) release_unordered_ = false;
            for (const auto& [ns, rows] : done.value.cancelled) {
                metrics_.outcome(ns, "cancelled").Increment(static_cast<double>(rows));
            }
            if (done.value.rearmed > 0) {
                spdlog::info("event=claims_rearmed count={}", done.value.rearmed);
                metrics_.rows_rearmed_total.Increment(static_cast<double>(done.value.rearmed));
            }
            if (done.value.let_go > 0) {
                spdlog::debug("event=waiting_rows_let_go count={}", done.value.let_go);
            }
            const auto& fired = done.value.fired;
            if (fired.staged > 0) {
                spdlog::info("event=schedules_fired schedules={} staged={}", fired.schedules,
                             fired.staged);
            }
            for (const auto& id : fired.refused) {
                spdlog::warn("event=schedule_refused id=\"{}\"", util::log_safe(id));
            }
            result("schedules", done.value.schedule_error);
            const auto back_in_line =
                done.value.rearmed + static_cast<std::size_t>(done.value.let_go);
            if (back_in_line > 0) rearmed_(back_in_line);
        });
    if (!queued) reconciling_ = false;  // the lane is full: the next tick tries again
}

void Maintenance::apply_retention() {
    // Periodic: when the lane is full, the next period tries again.
    (void)lane_.call(
        loop_, lifetime_.watch(),
        [retention = settings_.retention](store::MaintenanceStores& db) {
            std::int64_t total = 0;
            for (std::int64_t n = kRetentionBatch; n == kRetentionBatch;) {
                n = db.maintenance.delete_finished(retention, kRetentionBatch);
                total += n;
            }
            if (total > 0) spdlog::info("event=retention_deleted rows={}", total);
        },
        [this](const store::LaneResult<std::monostate>& done) { result("retention", done.error); });
}

void Maintenance::refresh_gauges() {
    // Periodic: when the lane is full, the next period tries again.
    (void)lane_.call(
        loop_, lifetime_.watch(),
        [ranges = owner_().ranges,
         blocking = ordered_().value_or(OrderedNamespaces{}).block](store::MaintenanceStores& db) {
            const auto started = Clock::now();
            Counted counted;
            for (const auto& [ns, c] : db.maintenance.count_live_by_namespace(ranges)) {
                counted.counts[ns] = {static_cast<double>(c.inflight),
                                      static_cast<double>(c.claimed)};
            }
            // Every blocking namespace has a value (0 when none is held back).
            for (const auto& ns : blocking) counted.blocked[ns] = 0;
            for (const auto& [ns, n] : db.maintenance.count_blocked_workflows(ranges, blocking)) {
                counted.blocked[ns] = static_cast<double>(n);
            }
            counted.took = Clock::now() - started;
            return counted;
        },
        [this](const store::LaneResult<Counted>& done) {
            gauges_rest_until_ = Clock::now() + 19 * done.value.took;
            if (done.ok()) {
                metrics_.set_row_gauges(done.value.counts);
                metrics_.set_blocked_workflows(done.value.blocked);
            } else {
                spdlog::debug("event=gauge_refresh_failed error=\"{}\"",
                              util::log_safe(done.error));
            }
        });
}

void Maintenance::result(std::string_view task, const std::string& error) {
    const auto now = Clock::now();
    auto found = failures_.find(task);
    if (found == failures_.end())
        found = failures_.emplace(std::string{task}, util::FailureRun{}).first;
    auto& failures = found->second;
    if (error.empty()) {
        const auto lasted = failures.lasted(now);
        if (const auto failed = failures.succeeded(); failed > 0) {
            spdlog::info("event=maintenance_recovered task={} failures={} after_ms={}", task,
                         failed, lasted.count());
        }
    } else if (failures.failed(now)) {
        spdlog::warn("event=maintenance_failed task={} failures={} for_ms={} error=\"{}\"", task,
                     failures.failures(), failures.lasted(now).count(), util::log_safe(error));
    }
}

}  // namespace outboxd::dispatch
