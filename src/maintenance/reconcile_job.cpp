// Reconcile: claims of incarnations that are gone are re-armed at once (not after a long
// timeout), claims older than a task may take are re-armed whoever holds them (the
// backstop), rows of cancelled workflows staged after the cancel (or left by a dead node)
// are settled, and waiting rows of ordered workflows that nothing holds back any more are let
// go. Every second (OUTBOXD_LEASE_TTL_MS / 2 at most), resting 19 times as long as it took.
// A probe comes first: in a database with no claim and no cancelled workflow (a quiet one)
// a run is that one cheap statement.

#include <algorithm>
#include <map>

#include <spdlog/spdlog.h>

#include "jobs.hpp"

namespace outboxd::maintenance {
namespace {

constexpr std::int32_t kBatch = 1000;

struct Reconciled {
    std::size_t rearmed = 0;
    std::int64_t let_go = 0;  // waiting rows
    bool released_unordered = false;
    std::map<std::string, std::int64_t> cancelled;  // rows settled, by namespace
};

class ReconcileJob final : public Job {
public:
    ReconcileJob(const UpkeepSettings& settings, Upkeep upkeep)
        : settings_(settings), upkeep_(std::move(upkeep)) {}

    [[nodiscard]] std::string_view name() const override { return "reconcile"; }
    [[nodiscard]] Timing timing() const override {
        return {settings_.reconcile_interval, 19, true, true, true};
    }

    std::optional<LaneWork> prepare() override {
        auto owner = upkeep_.owner();
        if (owner.ranges.empty()) return std::nullopt;
        auto ordered = upkeep_.ordered();
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
        return [this, owner = std::move(owner), liveness = settings_.liveness,
                stale = settings_.stale, stale_grace = settings_.stale_grace,
                skip = std::move(ordered->skip), all_ordered = std::move(all_ordered),
                release_unordered = known && release_unordered_](store::MaintenanceStores& db) {
            Reconciled done;
            auto& store = db.maintenance;
            const auto work = store.reconcile_work();
            if (work.claims) {
                done.rearmed += store.rearm_orphaned(owner, liveness, kBatch).size();
                done.rearmed += store.rearm_stale_claimed(owner, stale, kBatch, stale_grace).size();
            }
            auto cancelled =
                work.cancelled ? store.settle_cancelled(owner) : store::CancelledRows{};
            if (!cancelled.keys.empty()) {
                spdlog::info("event=cancelled_rows_settled database={} count={}",
                             upkeep_.metrics.database(), cancelled.keys.size());
            }
            done.cancelled = std::move(cancelled.by_namespace);
            // Waiting rows whose earlier rows ended while the claim that parked them ran.
            done.let_go = store.let_go_waiting(owner.ranges, all_ordered, skip, kBatch);
            if (release_unordered) {
                const auto released = store.release_unordered(owner.ranges, all_ordered, kBatch);
                done.released_unordered = released < kBatch;
                done.let_go += released;
            }
            return [this, done = std::move(done)] { report(done); };
        };
    }

private:
    void report(const Reconciled& done) {
        if (done.released_unordered) release_unordered_ = false;
        for (const auto& [ns, rows] : done.cancelled) {
            upkeep_.metrics.outcome(ns, "cancelled").Increment(static_cast<double>(rows));
        }
        if (done.rearmed > 0) {
            spdlog::info("event=claims_rearmed database={} count={}", upkeep_.metrics.database(),
                         done.rearmed);
            upkeep_.metrics.rows_rearmed_total.Increment(static_cast<double>(done.rearmed));
        }
        if (done.let_go > 0) spdlog::debug("event=waiting_rows_let_go count={}", done.let_go);
        const auto back_in_line = done.rearmed + static_cast<std::size_t>(done.let_go);
        if (back_in_line > 0) upkeep_.rearmed(back_in_line);
    }

    UpkeepSettings settings_;
    Upkeep upkeep_;
    // Waiting rows may be left in a namespace no longer ordered (at boot, who knows; after a
    // namespace left ordering): the reconciles let them go until one finds fewer than a batch.
    bool release_unordered_ = true;
    std::vector<std::string> last_ordered_;
};

}  // namespace

std::unique_ptr<Job> reconcile_job(const UpkeepSettings& settings, const Upkeep& upkeep) {
    return std::make_unique<ReconcileJob>(settings, upkeep);
}

}  // namespace outboxd::maintenance
