#include "outboxd/dispatch/dispatcher.hpp"

#include <random>

#include <boost/asio/post.hpp>
#include <spdlog/spdlog.h>

#include "outboxd/util/untrusted_text.hpp"

namespace outboxd::dispatch {
namespace {

using Clock = std::chrono::steady_clock;
namespace protocol = worker::protocol;

constexpr std::int32_t kReconcileBatch = 1000;
constexpr std::int32_t kRetentionBatch = 5000;

double seconds_since(Clock::time_point start) {
    return std::chrono::duration<double>(Clock::now() - start).count();
}

// Bounds how often the timeout scan runs: often enough for short test timeouts, rarely
// enough to cost nothing at the default 30 s.
std::chrono::milliseconds timeout_scan_period(std::chrono::milliseconds task_timeout) {
    return std::clamp(task_timeout / 10, std::chrono::milliseconds{5},
                      std::chrono::milliseconds{1000});
}

}  // namespace

std::string task_id_for(const store::ClaimRef& ref) {
    return std::to_string(ref.id) + "." + std::to_string(ref.token);
}

Dispatcher::Dispatcher(boost::asio::any_io_executor loop, DispatchLanes lanes,
                       worker::WorkerRegistry& registry, NamespaceCache& namespaces,
                       metrics::NodeMetrics& metrics, DispatchSettings settings, OwnerSource owner)
    : loop_(loop),
      lanes_(lanes),
      registry_(registry),
      namespaces_(namespaces),
      metrics_(metrics),
      settings_(settings),
      owner_(std::move(owner)),
      outcomes_(loop, lanes.outcomes, metrics, settings.max_outcome_batch),
      claim_faults_({}, std::random_device{}()),
      claimer_(std::make_shared<ClaimerState>(settings.claim_lookback)),
      poll_timer_(loop),
      claim_retry_timer_(loop),
      timeout_timer_(loop),
      reconcile_timer_(loop),
      retention_timer_(loop),
      gauge_timer_(loop),
      alive_(std::make_shared<Dispatcher*>(this)) {
    // Writes landing free the way for drain; recovering writes allow claims again.
    outcomes_.on_settled([this] {
        check_drained();
        request_sweep();
    });
    outcomes_.on_rearmed([this] { claim_from_front(); });
}

Dispatcher::~Dispatcher() { *alive_ = nullptr; }

template <typename Handler>
void Dispatcher::every(boost::asio::steady_timer& timer, std::chrono::milliseconds period,
                       Handler handler) {
    timer.expires_after(period);
    timer.async_wait([this, &timer, period, handler, alive = std::weak_ptr(alive_)](auto ec) {
        const auto self = alive.lock();
        if (ec || !self || !*self || stopped_) return;
        // A periodic task that throws once must still run next period: counted, re-armed.
        try {
            handler();
        } catch (const std::exception& error) {
            metrics_.fault("timer").Increment();
            spdlog::error("event=fault where=timer error=\"{}\"", util::log_safe(error.what()));
        }
        every(timer, period, handler);
    });
}

void Dispatcher::start() {
    stopped_ = false;
    every(poll_timer_, settings_.poll_interval, [this] {
        backlog_likely_ = true;  // the backstop: look whatever the last round said
        if (Clock::now() - last_front_scan_ >= front_scan_period_) {
            // Rows due by now on any route (backoffs ended, scheduled rows, rows behind where
            // claims read on): probe the inactive routes, read the active ones from the front.
            last_front_scan_ = Clock::now();
            ++front_generation_;
            activity_.look_everywhere();
        }
        request_sweep();
    });
    every(timeout_timer_, timeout_scan_period(settings_.task_timeout),
          [this] { expire_timeouts(); });
    // Periodic maintenance rests 19 times as long as it last took, so that it never takes
    // more than a twentieth of its lane (scans that slow down under an old snapshot).
    every(reconcile_timer_, settings_.reconcile_interval, [this] {
        if (Clock::now() >= reconcile_rest_until_) reconcile();
    });
    every(retention_timer_, settings_.retention_interval, [this] { apply_retention(); });
    every(gauge_timer_, settings_.gauge_interval, [this] {
        if (Clock::now() >= gauges_rest_until_) refresh_gauges();
    });
    request_sweep();
}

void Dispatcher::stop() {
    stopped_ = true;
    for (auto* timer : {&poll_timer_, &claim_retry_timer_, &timeout_timer_, &reconcile_timer_,
                        &retention_timer_, &gauge_timer_}) {
        timer->cancel();
    }
}

void Dispatcher::claim_from_front() {
    ++front_generation_;
    backlog_likely_ = true;
    activity_.look_everywhere();  // the rows put back in line may be on any route
    request_sweep();
}

void Dispatcher::worker_joined() {
    activity_.look_everywhere();  // its routes may have a backlog nobody woke anyone for
    request_sweep();
}

void Dispatcher::woken(const std::vector<std::pair<std::string, std::string>>& queues,
                       bool anywhere) {
    if (anywhere) activity_.look_everywhere();
    activity_.woken(queues, Clock::now());
    request_sweep();
}

void Dispatcher::ranges_changed() {
    // New shards may hold claims of another node and rows behind every cursor.
    ++ranges_generation_;
    claim_from_front();
}

void Dispatcher::request_sweep() {
    if (claiming_) {
        sweep_again_ = true;
        return;
    }
    boost::asio::post(loop_, [alive = std::weak_ptr(alive_)] {
        const auto self = alive.lock();
        if (self && *self) (*self)->sweep();
    });
    claiming_ = true;  // reserved until sweep() runs, so triggers coalesce
}

void Dispatcher::sweep() {
    claiming_ = false;
    // A node that cannot write outcomes stops claiming until the writes land again.
    if (draining_ || stopped_ || !outcomes_.healthy()) return check_drained();
    // After a failed round, triggers wait for its backoff (claim_retry_timer_ sweeps then).
    if (claim_faults_.waiting(Clock::now())) return;
    auto owner = owner_();
    if (owner.ranges.empty()) return;
    auto routes =
        registry_.routes([this](const std::string& ns) { return namespaces_.placement(ns); });
    const auto now = Clock::now();
    claim_faults_.drop_resting(routes, now);
    // Only routes known to have due rows are claimed; the others are probed when rows may
    // have become due anywhere. An idle route costs nothing.
    auto split = activity_.split(routes, now);
    if (split.claim.empty() && split.probe.empty()) return;

    ClaimRequest request;
    std::map<std::string, std::int64_t> quotas;
    std::map<std::string, std::int64_t> weights;
    for (const auto* list : {&split.claim, &split.probe}) {
        for (const auto& route : *list) {
            const auto& ns = route.scope.namespace_name;
            if (!quotas.contains(ns)) {
                quotas.emplace(ns, namespaces_.quota(ns));
                weights.emplace(ns, namespaces_.weight(ns));
            }
        }
    }
    request.owner = std::move(owner);
    request.routes = std::move(split.claim);
    request.probe = std::move(split.probe);
    // Snapshots: the round runs on the lane while the cache may change on the loop.
    request.quota = [quotas](const std::string& ns) { return quotas.at(ns); };
    request.weight = [weights](const std::string& ns) { return weights.at(ns); };
    request.batch_size = settings_.batch_size;
    request.generations = ClaimGenerations{front_generation_, ranges_generation_};
    request.settled = outcomes_.take_settled();
    claiming_ = true;
    sweep_again_ = false;
    const auto started = Clock::now();
    const bool queued = lanes_.claims.submit(
        [alive = std::weak_ptr(alive_), loop = loop_, request = std::move(request),
         claimer = claimer_, release_after = std::exchange(release_after_, std::nullopt),
         started](DbHandles db) {
            ClaimRoundResult result;
            std::string error;
            try {
                if (release_after) {
                    // The last round failed: what it may have claimed unseen goes back first.
                    const auto released =
                        db.outbox.release_claims_after(request.owner, *release_after);
                    if (released > 0) {
                        spdlog::warn("event=unknown_claims_released rows={}", released);
                        claimer->tally.known = false;
                    }
                }
                result = claim_round(db.outbox, request, *claimer);
            } catch (const std::exception& e) {
                error = e.what();
            }
            const double seconds = seconds_since(started);
            boost::asio::post(loop, [alive, result = std::move(result), error = std::move(error),
                                     seconds, started]() mutable {
                const auto self = alive.lock();
                if (self && *self)
                    (*self)->on_claimed(std::move(result), std::move(error), seconds, started);
            });
        });
    if (!queued) {
        // Only one round is ever in flight, so a full claims lane means a stalled database.
        // The refused round took the settled counts with it: count again next time.
        claimer_->tally.known = false;
        on_claimed({}, "the claims lane is full", 0.0, started);
    }
}

void Dispatcher::on_claimed(ClaimRoundResult result, std::string error, double seconds,
                            Clock::time_point round_started) {
    claiming_ = false;
    metrics_.claim_seconds.Observe(seconds);
    const auto now = Clock::now();
    if (!error.empty()) {
        // Its claims may have committed unseen: release them before the next claim, which
        // then reads from the front (they keep their place in line). The next round waits
        // for the backoff, whatever triggers it meanwhile.
        release_after_ = last_claim_token_;
        ++front_generation_;
        backlog_likely_ = true;
        activity_.look_everywhere();  // what the failed round was to probe is unknown still
        claim_retry_timer_.expires_after(claim_faults_.round_failed(error, now));
        claim_retry_timer_.async_wait([alive = std::weak_ptr(alive_)](auto ec) {
            const auto self = alive.lock();
            if (!ec && self && *self) (*self)->request_sweep();
        });
        check_drained();
        return;
    }
    claim_faults_.round_succeeded(now);
    activity_.settled(result.found, result.came_back_short, now);
    for (const auto& [scope, why] : result.refused) {
        metrics_.claim_route_errors_total.Increment();
        claim_faults_.route_refused(scope, why, now);
    }
    last_claim_token_ = std::max(last_claim_token_, result.last_token);
    // Writes that landed while the round counted may be in its count already.
    if (result.counted) (void)outcomes_.take_settled();
    if (result.from_front) {
        // Spend at most about a twentieth of the time on backstop claims from the front.
        front_scan_period_ = std::max<Clock::duration>(
            settings_.poll_interval, std::chrono::duration_cast<Clock::duration>(
                                         std::chrono::duration<double>(20 * seconds)));
    }
    backlog_likely_ = result.saturated;
    // Every row claimed counts, whether it is pushed or handed back.
    for (const auto& row : result.rows) metrics_.claimed(row.namespace_name).Increment();
    round_started_ = round_started;
    // Each row gets its worker (and takes one of its credits) first; then the next round is
    // asked for, so that it runs in the database while this round's tasks are encoded and
    // sent.
    std::vector<std::pair<worker::WorkerEntry*, store::OutboxRow*>> placed;
    placed.reserve(result.rows.size());
    for (auto& row : result.rows) {
        auto* worker = registry_.pick(row, namespaces_.placement(row.namespace_name));
        if (!worker || draining_) {
            // The worker left (or we began draining) between planning and claiming: hand the
            // row back untouched, without consuming an attempt.
            metrics_.rows_released_total.Increment();
            outcomes_.record(store::Outcome::release({row.id, row.claim_token}), row.namespace_name,
                             "");
            continue;
        }
        ++worker->outstanding;
        placed.emplace_back(worker, &row);
    }
    if (result.saturated || sweep_again_) sweep();
    for (auto& [worker, row] : placed) {
        // One row's fault must not strand the others' credit: hand it back and go on.
        try {
            push(*worker, *row);
        } catch (const std::exception& error) {
            metrics_.fault("dispatch").Increment();
            spdlog::error("event=fault where=dispatch error=\"{}\"", util::log_safe(error.what()));
            const store::ClaimRef ref{row->id, row->claim_token};
            if (const auto it = in_flight_.find(task_id_for(ref)); it != in_flight_.end()) {
                (void)take(it);  // gives the credit back
            } else {
                --worker->outstanding;
            }
            outcomes_.record(store::Outcome::release(ref), row->namespace_name, "");
        }
    }
    check_drained();
}

void Dispatcher::push(worker::WorkerEntry& worker, store::OutboxRow& row) {
    const store::ClaimRef ref{row.id, row.claim_token};
    if (util::json_nesting_depth(row.input_json, protocol::kMaxInputNesting) >
        protocol::kMaxInputNesting) {
        return refuse(worker, ref, row.namespace_name, row.dispatch_key,
                      "input nests deeper than " + std::to_string(protocol::kMaxInputNesting) +
                          " levels, which no task frame may carry");
    }
    protocol::Task task;
    task.task_id = task_id_for(ref);
    task.dispatch_key = std::move(row.dispatch_key);
    task.workflow_id = std::move(row.workflow_id);
    task.ordinal = row.ordinal;
    task.run_id = std::move(row.run_id);
    task.namespace_name = row.namespace_name;
    task.task_queue = std::move(row.task_queue);
    task.node = std::move(row.node);
    task.activity_type = std::move(row.activity_type);
    task.input_json = std::move(row.input_json);
    task.attempt = std::int64_t{row.attempt} + 1;  // one-based on the wire
    task.timeout_ms = settings_.task_timeout.count();
    auto frame = protocol::encode(task);
    // A worker that said how large a frame it reads would drop the connection on a larger
    // one, and every task on it with it.
    if (const auto limit = worker.hello.max_frame_bytes; limit > 0 && frame.size() > limit) {
        return refuse(worker, ref, row.namespace_name, task.dispatch_key,
                      "the task frame is " + std::to_string(frame.size()) +
                          " bytes, more than the " + std::to_string(limit) + " the worker reads");
    }

    const auto [entry, added] = in_flight_.try_emplace(
        task.task_id, InFlight{ref, worker.session_id, row.namespace_name, row.attempt, {}});
    if (!added) {
        // A claim token handed out twice; never expected (see OutboxStore::Commits). Hand
        // the row back rather than track two deliveries under one id.
        spdlog::error("event=duplicate_task_id task_id={}", task.task_id);
        --worker.outstanding;
        outcomes_.record(store::Outcome::release(ref), row.namespace_name, "");
        return;
    }
    entry->second.deadline =
        deadlines_.emplace(Clock::now() + settings_.task_timeout, task.task_id);
    worker.channel->send(std::move(frame));

    metrics_.outstanding(row.namespace_name).Increment();
    // Due -> pushed, each part on one clock: due -> claimed on the database's (visible_after
    // and claimed_at are both its instants), claimed -> pushed on this node's (from the
    // round's submission), so that no two hosts' clocks are ever compared.
    const auto due_to_claimed =
        row.claimed_at ? std::chrono::duration<double>(*row.claimed_at - row.visible_after).count()
                       : 0.0;
    const auto claimed_to_pushed =
        std::chrono::duration<double>(Clock::now() - round_started_).count();
    metrics_.dispatch_latency.Observe(std::max(0.0, due_to_claimed) + claimed_to_pushed);
}

void Dispatcher::refuse(worker::WorkerEntry& worker, store::ClaimRef ref,
                        const std::string& namespace_name, const std::string& dispatch_key,
                        std::string reason) {
    --worker.outstanding;
    spdlog::warn("event=row_undeliverable dispatch_key=\"{}\" reason=\"{}\"",
                 util::log_safe(dispatch_key), reason);
    outcomes_.record(store::Outcome::fail(ref, std::move(reason)), namespace_name, "failed");
}

Dispatcher::InFlight Dispatcher::take(std::unordered_map<std::string, InFlight>::iterator it) {
    InFlight task = std::move(it->second);
    in_flight_.erase(it);
    deadlines_.erase(task.deadline);
    if (auto* worker = registry_.find(task.session_id)) --worker->outstanding;
    metrics_.outstanding(task.namespace_name).Decrement();
    return task;
}

std::optional<protocol::Error> Dispatcher::on_complete(const worker::WorkerEntry& worker,
                                                       const protocol::Complete& answer) {
    const auto it = in_flight_.find(answer.task_id);
    if (it == in_flight_.end() || it->second.session_id != worker.session_id) {
        return protocol::Error{std::string{protocol::code::unknown_task},
                               "no outstanding task '" + answer.task_id + "' on this connection"};
    }
    const InFlight task = take(it);
    outcomes_.record(store::Outcome::done(task.ref), task.namespace_name, "done");
    if (backlog_likely_ || sweep_again_) request_sweep();
    check_drained();
    return std::nullopt;
}

std::optional<protocol::Error> Dispatcher::on_fail(const worker::WorkerEntry& worker,
                                                   const protocol::Fail& answer) {
    const auto it = in_flight_.find(answer.task_id);
    if (it == in_flight_.end() || it->second.session_id != worker.session_id) {
        return protocol::Error{std::string{protocol::code::unknown_task},
                               "no outstanding task '" + answer.task_id + "' on this connection"};
    }
    const InFlight task = take(it);
    record_failure(task, answer.error.empty() ? "worker reported failure" : answer.error,
                   answer.retryable, /*immediate=*/false);
    if (backlog_likely_ || sweep_again_) request_sweep();
    check_drained();
    return std::nullopt;
}

void Dispatcher::record_failure(const InFlight& task, const std::string& error, bool retryable,
                                bool immediate) {
    if (!retryable || std::int64_t{task.attempt} + 1 >= settings_.max_attempts) {
        outcomes_.record(store::Outcome::fail(task.ref, error), task.namespace_name, "failed");
        return;
    }
    // A lost connection re-arms for immediate re-claim (fast failover) but still consumes
    // the attempt, so worker churn stays bounded by max_attempts.
    const auto delay =
        immediate ? std::chrono::milliseconds{0} : settings_.backoff.delay_for(task.attempt);
    outcomes_.record(store::Outcome::retry(task.ref, delay, error), task.namespace_name,
                     immediate ? "failover" : "retry");
}

void Dispatcher::on_worker_lost(const std::string& session_id) {
    std::vector<std::string> lost;
    for (const auto& [task_id, task] : in_flight_) {
        if (task.session_id == session_id) lost.push_back(task_id);
    }
    for (const auto& task_id : lost) {
        const InFlight task = take(in_flight_.find(task_id));
        record_failure(task, "worker connection lost", /*retryable=*/true, /*immediate=*/true);
    }
    registry_.remove(session_id);
    if (!lost.empty()) {
        spdlog::info("event=worker_lost session={} rearmed={}", session_id, lost.size());
        backlog_likely_ = true;
        request_sweep();
    }
    check_drained();
}

void Dispatcher::expire_timeouts() {
    const auto now = Clock::now();
    std::size_t expired = 0;
    while (!deadlines_.empty() && deadlines_.begin()->first <= now) {
        const InFlight task = take(in_flight_.find(deadlines_.begin()->second));
        record_failure(
            task, "task timed out after " + std::to_string(settings_.task_timeout.count()) + " ms",
            /*retryable=*/true, /*immediate=*/false);
        ++expired;
    }
    if (expired > 0) {
        spdlog::warn("event=tasks_timed_out count={}", expired);
        request_sweep();
        check_drained();
    }
}

void Dispatcher::reconcile() {
    if (maintenance_busy_ || draining_) return;
    auto owner = owner_();
    if (owner.ranges.empty()) return;
    maintenance_busy_ = true;
    const bool queued = lanes_.maintenance.submit(
        [alive = std::weak_ptr(alive_), loop = loop_, owner = std::move(owner),
         liveness = settings_.liveness,
         stale = settings_.task_timeout + settings_.stale_grace](DbHandles db) {
            const auto started = Clock::now();
            std::size_t rearmed = 0;
            std::map<std::string, std::int64_t> cancelled_by_namespace;
            std::string error;
            try {
                // Claims of incarnations that are gone: at once, not after a long timeout.
                rearmed += db.outbox.rearm_orphaned(owner, liveness, kReconcileBatch).size();
                // Backstop: anything claimed far longer than a task may take, whoever holds it.
                rearmed += db.outbox.rearm_stale_claimed(owner, stale, kReconcileBatch).size();
                // Rows of cancelled workflows staged after the cancel, or left by a dead node.
                auto cancelled = db.outbox.settle_cancelled(owner);
                if (!cancelled.keys.empty()) {
                    spdlog::info("event=cancelled_rows_settled count={}", cancelled.keys.size());
                }
                cancelled_by_namespace = std::move(cancelled.by_namespace);
            } catch (const std::exception& e) {
                error = e.what();
            }
            const auto took = Clock::now() - started;
            boost::asio::post(loop, [alive, rearmed, took, error = std::move(error),
                                     cancelled = std::move(cancelled_by_namespace)] {
                const auto self = alive.lock();
                if (!self || !*self) return;
                for (const auto& [ns, rows] : cancelled) {
                    (*self)->metrics_.outcome(ns, "cancelled").Increment(static_cast<double>(rows));
                }
                (*self)->maintenance_busy_ = false;
                (*self)->reconcile_rest_until_ = Clock::now() + 19 * took;
                (*self)->maintenance_result("reconcile", error);
                if (rearmed > 0) {
                    spdlog::info("event=claims_rearmed count={}", rearmed);
                    (*self)->metrics_.rows_rearmed_total.Increment(static_cast<double>(rearmed));
                    (*self)->claim_from_front();
                }
            });
        });
    if (!queued) maintenance_busy_ = false;  // the lane is full: the next tick tries again
}

void Dispatcher::maintenance_result(std::string_view task, const std::string& error) {
    const auto now = Clock::now();
    auto& failures = maintenance_failures_[std::string{task}];
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

void Dispatcher::apply_retention() {
    // Periodic: when the lane is full, the next period tries again.
    (void)lanes_.maintenance.submit([alive = std::weak_ptr(alive_), loop = loop_,
                                     retention = settings_.retention](DbHandles db) {
        std::string error;
        try {
            std::int64_t total = 0;
            for (std::int64_t n = kRetentionBatch; n == kRetentionBatch;) {
                n = db.outbox.delete_finished(retention, kRetentionBatch);
                total += n;
            }
            if (total > 0) spdlog::info("event=retention_deleted rows={}", total);
        } catch (const std::exception& e) {
            error = e.what();
        }
        boost::asio::post(loop, [alive, error = std::move(error)] {
            const auto self = alive.lock();
            if (self && *self) (*self)->maintenance_result("retention", error);
        });
    });
}

void Dispatcher::refresh_gauges() {
    auto owner = owner_();
    // Periodic: when the lane is full, the next period tries again.
    (void)lanes_.maintenance.submit(
        [alive = std::weak_ptr(alive_), loop = loop_, ranges = owner.ranges](DbHandles db) {
            const auto started = Clock::now();
            std::map<std::string, std::pair<double, double>> counts;
            bool ok = true;
            try {
                for (const auto& [ns, c] : db.outbox.count_live_by_namespace(ranges)) {
                    counts[ns] = {static_cast<double>(c.inflight), static_cast<double>(c.claimed)};
                }
            } catch (const std::exception& error) {
                spdlog::debug("event=gauge_refresh_failed error=\"{}\"", error.what());
                ok = false;
            }
            const auto took = Clock::now() - started;
            boost::asio::post(loop, [alive, counts = std::move(counts), ok, took] {
                const auto self = alive.lock();
                if (!self || !*self) return;
                (*self)->gauges_rest_until_ = Clock::now() + 19 * took;
                if (ok) (*self)->metrics_.set_row_gauges(counts);
            });
        });
}

void Dispatcher::drain(std::function<void()> done) {
    draining_ = true;
    drained_ = std::move(done);
    registry_.retire_all();
    check_drained();
}

void Dispatcher::abandon_outstanding(const std::string& reason) {
    while (!in_flight_.empty()) {
        const InFlight task = take(in_flight_.begin());
        record_failure(task, reason, /*retryable=*/true, /*immediate=*/true);
    }
    check_drained();
}

void Dispatcher::check_drained() {
    if (!draining_ || !drained_ || !in_flight_.empty() || !outcomes_.idle() || claiming_) return;
    auto done = std::move(drained_);
    drained_ = nullptr;
    done();
}

}  // namespace outboxd::dispatch
