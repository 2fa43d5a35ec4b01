#include "outboxd/dispatch/dispatcher.hpp"

#include <boost/asio/post.hpp>
#include <spdlog/spdlog.h>

#include "outboxd/util/untrusted_text.hpp"

namespace outboxd::dispatch {
namespace {

using Clock = std::chrono::steady_clock;

// Bounds how often the timeout scan runs: often enough for short test timeouts, rarely
// enough to cost nothing at the default 30 s.
std::chrono::milliseconds timeout_scan_period(std::chrono::milliseconds task_timeout) {
    return std::clamp(task_timeout / 10, std::chrono::milliseconds{5},
                      std::chrono::milliseconds{1000});
}

Maintenance::Settings maintenance_settings(const DispatchSettings& settings) {
    auto maintenance = settings.maintenance;
    maintenance.stale = settings.task_timeout + settings.stale_grace;
    return maintenance;
}

}  // namespace

Dispatcher::Dispatcher(const boost::asio::any_io_executor& loop, DispatchLanes lanes,
                       worker::WorkerRegistry& registry, NamespaceCache& namespaces,
                       metrics::NodeMetrics& metrics, DispatchSettings settings, OwnerSource owner)
    : loop_(loop),
      registry_(registry),
      namespaces_(namespaces),
      metrics_(metrics),
      settings_(settings),
      failure_policy_{settings.max_attempts, settings.backoff},
      owner_(std::move(owner)),
      outcomes_(loop, lanes.outcomes, metrics, settings.max_outcome_batch),
      claimer_(loop, lanes.claims, lanes.claims_apart, metrics,
               {settings.poll_interval, settings.batch_size, settings.claim_lookback}),
      maintenance_(
          loop, lanes.maintenance, metrics, maintenance_settings(settings), owner_,
          [this]() -> std::optional<Maintenance::OrderedNamespaces> {
              if (!namespaces_.loaded()) return std::nullopt;
              auto [skip, block] = namespaces_.ordered();
              return Maintenance::OrderedNamespaces{std::move(skip), std::move(block)};
          },
          [this](std::size_t) { claim_from_front(); }),
      poll_timer_(
          loop, settings.poll_interval,
          [this] {
              backlog_likely_ = true;  // the backstop: look whatever the last round said
              // Rows due by now on any route (backoffs ended, scheduled rows, rows behind
              // where claims read on): probe the inactive routes, read the active ones from
              // the front.
              if (claimer_.backstop_due(Clock::now())) activity_.look_everywhere();
              request_sweep();
          },
          metrics.fault("timer")),
      timeout_timer_(
          loop, timeout_scan_period(settings.task_timeout), [this] { expire_timeouts(); },
          metrics.fault("timer")),
      claim_retry_timer_(loop),
      throttle_timer_(loop) {
    // Writes landing free the way for drain; recovering writes allow claims again.
    outcomes_.on_settled([this] {
        slots_freed_ = true;
        // A full concurrency limit may have room now.
        std::erase_if(held_, [](const auto& entry) { return entry.second.full; });
        check_drained();
        request_sweep();
    });
    outcomes_.on_rearmed([this] { claim_from_front(); });
    // Nothing is claimed before the namespaces' controls are known.
    namespaces_.on_loaded([this] { request_sweep(); });
    outcomes_.on_let_go([this](const std::vector<QueueKey>& queues) {
        activity_.woken(queues, Clock::now());
        request_sweep();
    });
}

void Dispatcher::start() {
    stopped_ = false;
    poll_timer_.start();
    timeout_timer_.start();
    maintenance_.start();
    claimer_.connect_apart_lane();
    request_sweep();
}

void Dispatcher::stop() {
    stopped_ = true;
    poll_timer_.stop();
    timeout_timer_.stop();
    maintenance_.stop();
    claim_retry_timer_.cancel();
    throttle_timer_.cancel();
}

void Dispatcher::claim_from_front() {
    claimer_.read_from_front();
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
    const auto now = Clock::now();
    activity_.woken(claim_apart(queues, now), now);
    request_sweep();
}

std::vector<Dispatcher::QueueKey> Dispatcher::claim_apart(const std::vector<QueueKey>& queues,
                                                          Clock::time_point now) {
    // Without a round in flight the next round is as quick; the busy routes' own wakes
    // (their namespaces are in the round) cost nothing more than this look.
    if (!claimer_.claiming() || !claimer_.can_claim_apart(now) || draining_ || stopped_ ||
        !outcomes_.healthy() || !namespaces_.loaded() ||
        std::all_of(queues.begin(), queues.end(),
                    [this](const QueueKey& q) { return round_namespaces_.contains(q.first); })) {
        return queues;
    }
    auto owner = owner_();
    if (owner.ranges.empty()) return queues;
    const std::set<QueueKey> woken(queues.begin(), queues.end());
    auto routes =
        registry_.routes([this](const std::string& ns) { return namespaces_.placement(ns); });
    claimer_.drop_resting(routes, now);
    drop_held(routes, now);
    // A queue is claimed apart only when none of its routes is active (the rounds serve
    // those) and its namespace is not in the round in flight.
    std::set<QueueKey> to_rounds;
    std::vector<worker::Route> apart;
    for (auto& route : routes) {
        QueueKey key{route.scope.namespace_name, route.scope.task_queue};
        if (!woken.contains(key)) continue;
        if (activity_.active(route.scope) || round_namespaces_.contains(key.first)) {
            to_rounds.insert(std::move(key));
        } else {
            apart.push_back(std::move(route));
        }
    }
    std::erase_if(apart, [&to_rounds](const worker::Route& route) {
        return to_rounds.contains({route.scope.namespace_name, route.scope.task_queue});
    });
    if (apart.empty()) return queues;

    std::map<std::string, std::int64_t> quotas;
    for (const auto& route : apart) {
        const auto& ns = route.scope.namespace_name;
        quotas.try_emplace(ns, namespaces_.quota(ns));
        apart_namespaces_.insert(ns);
    }
    std::vector<QueueKey> rest;
    for (const auto& queue : queues) {
        if (!apart_namespaces_.contains(queue.first) || to_rounds.contains(queue))
            rest.push_back(queue);
    }
    ClaimRequest request;
    request.owner = std::move(owner);
    request.routes = std::move(apart);
    request.quota = [quotas](const std::string& ns) { return quotas.at(ns); };
    request.controls = controls_of(apart_namespaces_);
    claimer_.claim_apart(std::move(request),
                         [this](Claimer::Round round) { on_claimed_apart(std::move(round)); });
    return rest;
}

void Dispatcher::on_claimed_apart(Claimer::Round round) {
    apart_namespaces_.clear();
    if (!round.error.empty()) {
        activity_.look_everywhere();  // what it was to claim is for the rounds now
    } else {
        auto& result = round.result;
        activity_.settled(result.found, result.came_back_short, Clock::now());
        held_back(round);
        for (const auto& row : result.rows) ++claimed_apart_[row.namespace_name];
        push_all(place(result.rows), round.started);
    }
    request_sweep();  // wakes for its namespaces meanwhile wait for a round
    check_drained();
}

void Dispatcher::ranges_changed() {
    claimer_.ranges_changed();
    claim_from_front();
}

void Dispatcher::request_sweep() {
    if (claiming_) {
        sweep_again_ = true;
        return;
    }
    boost::asio::post(loop_, [this, watch = lifetime_.watch()] {
        if (!watch.expired()) sweep();
    });
    claiming_ = true;  // reserved until sweep() runs, so triggers coalesce
}

void Dispatcher::sweep() {
    claiming_ = false;
    // A node that cannot write outcomes stops claiming until the writes land again.
    if (draining_ || stopped_ || !outcomes_.healthy()) return check_drained();
    if (!namespaces_.loaded()) return;  // its on_loaded sweeps
    // After a failed round, triggers wait for its backoff (claim_retry_timer_ sweeps then).
    const auto now = Clock::now();
    if (claimer_.waiting(now)) return;
    auto owner = owner_();
    if (owner.ranges.empty()) return;
    auto routes =
        registry_.routes([this](const std::string& ns) { return namespaces_.placement(ns); });
    claimer_.drop_resting(routes, now);
    drop_held(routes, now);
    if (!apart_namespaces_.empty()) {
        std::erase_if(routes, [this](const worker::Route& route) {
            return apart_namespaces_.contains(route.scope.namespace_name);
        });
    }
    // Only routes known to have due rows are claimed; the others are probed when rows may
    // have become due anywhere. An idle route costs nothing.
    auto split = activity_.split(routes, now);
    if (split.claim.empty() && split.probe.empty()) return;

    std::map<std::string, std::int64_t> quotas;
    std::map<std::string, std::int64_t> weights;
    round_namespaces_.clear();
    for (const auto* list : {&split.claim, &split.probe}) {
        for (const auto& route : *list) {
            const auto& ns = route.scope.namespace_name;
            if (!quotas.contains(ns)) {
                quotas.emplace(ns, namespaces_.quota(ns));
                weights.emplace(ns, namespaces_.weight(ns));
                round_namespaces_.insert(ns);
            }
        }
    }
    ClaimRequest request;
    request.owner = std::move(owner);
    request.routes = std::move(split.claim);
    request.probe = std::move(split.probe);
    // Snapshots: the round runs on the lane while the cache may change on the loop.
    request.quota = [quotas](const std::string& ns) { return quotas.at(ns); };
    request.weight = [weights](const std::string& ns) { return weights.at(ns); };
    request.settled = outcomes_.take_settled();
    request.claimed_apart = std::exchange(claimed_apart_, {});
    request.controls = controls_of(round_namespaces_);
    request.slots_freed = std::exchange(slots_freed_, false);
    claiming_ = true;
    sweep_again_ = false;
    claimer_.claim(std::move(request),
                   [this](Claimer::Round round) { on_claimed(std::move(round)); });
}

std::map<std::string, store::DeliveryControls> Dispatcher::controls_of(
    const std::set<std::string>& names) const {
    std::map<std::string, store::DeliveryControls> out;
    if (!namespaces_.any_controls()) return out;
    const store::DeliveryControls none;
    for (const auto& ns : names) {
        const auto& controls = namespaces_.controls(ns);
        if (!(controls == none)) out.emplace(ns, controls);
    }
    return out;
}

void Dispatcher::drop_held(std::vector<worker::Route>& routes, Clock::time_point now) {
    if (held_.empty()) return;
    std::erase_if(held_, [now](const auto& entry) { return entry.second.until <= now; });
    std::erase_if(routes,
                  [this](const worker::Route& route) { return held_.contains(route.scope); });
}

void Dispatcher::held_back(const Claimer::Round& round) {
    // A limit that left rows unclaimed says when it may let some go: the route is left out
    // of the rounds until then (no rounds, no statements while it has no room), and a round
    // is claimed then.
    std::optional<std::chrono::milliseconds> soonest;
    const auto now = Clock::now();
    for (const auto& [scope, wait] : round.result.throttled) {
        soonest = soonest ? std::min(*soonest, wait) : wait;
        const bool full = std::find(round.result.full.begin(), round.result.full.end(), scope) !=
                          round.result.full.end();
        held_[scope] = {now + wait, full};
    }
    if (!soonest) return;
    const auto at = Clock::now() + *soonest;
    if (throttle_armed_ && throttle_at_ <= at) return;
    throttle_armed_ = true;
    throttle_at_ = at;
    throttle_timer_.expires_at(at);
    throttle_timer_.async_wait([this, watch = lifetime_.watch()](auto ec) {
        if (ec || watch.expired()) return;
        throttle_armed_ = false;
        request_sweep();
    });
}

void Dispatcher::on_claimed(Claimer::Round round) {
    claiming_ = false;
    round_namespaces_.clear();
    const auto now = Clock::now();
    if (!round.error.empty()) {
        // The next round waits for the backoff, whatever triggers it meanwhile, and looks
        // everywhere: what the failed round was to probe is unknown still.
        backlog_likely_ = true;
        activity_.look_everywhere();
        claim_retry_timer_.expires_after(round.retry_after);
        claim_retry_timer_.async_wait([this, watch = lifetime_.watch()](auto ec) {
            if (!ec && !watch.expired()) request_sweep();
        });
        check_drained();
        return;
    }
    auto& result = round.result;
    activity_.settled(result.found, result.came_back_short, now);
    held_back(round);
    // Writes that landed while the round counted may be in its count already.
    if (result.counted) (void)outcomes_.take_settled();
    backlog_likely_ = result.saturated;
    // Each row gets its worker (and takes one of its credits) first; then the next round is
    // asked for, so that it runs in the database while this round's tasks are encoded and
    // sent.
    const auto placed = place(result.rows);
    if (result.saturated || sweep_again_) sweep();
    push_all(placed, round.started);
    check_drained();
}

std::vector<Dispatcher::Placed> Dispatcher::place(std::vector<store::OutboxRow>& rows) {
    std::vector<Placed> placed;
    placed.reserve(rows.size());
    for (auto& row : rows) {
        // Every row claimed counts, whether it is pushed or handed back.
        metrics_.claimed(row.namespace_name).Increment();
        auto* worker = registry_.pick(row, namespaces_.placement(row.namespace_name));
        if (!worker || draining_ || !registry_.reserve(*worker)) {
            // The worker left (or we began draining) between planning and claiming: hand the
            // row back untouched, without consuming an attempt.
            metrics_.rows_released_total.Increment();
            outcomes_.record(store::Outcome::release({row.id, row.claim_token}), row.namespace_name,
                             "");
            continue;
        }
        placed.push_back({worker, &row});
    }
    return placed;
}

void Dispatcher::push_all(const std::vector<Placed>& placed, Clock::time_point round_started) {
    for (const auto& [worker, row] : placed) {
        // One row's fault must not strand the others' credit: hand it back and go on.
        try {
            push(*worker, *row, round_started);
        } catch (const std::exception& error) {
            metrics_.fault("dispatch").Increment();
            spdlog::error("event=fault where=dispatch error=\"{}\"", util::log_safe(error.what()));
            const store::ClaimRef ref{row->id, row->claim_token};
            (void)in_flight_.take(task_id_for(ref), worker->session_id);
            registry_.release(worker->session_id);
            outcomes_.record(store::Outcome::release(ref), row->namespace_name, "");
        }
    }
}

void Dispatcher::push(worker::WorkerEntry& worker, store::OutboxRow& row,
                      Clock::time_point round_started) {
    const store::ClaimRef ref{row.id, row.claim_token};
    const auto timeout = worker.task_timeout.value_or(settings_.task_timeout);
    InFlightTask tracked{ref, worker.session_id, row.namespace_name, row.attempt, {}, {}, {}};
    if (row.traceparent) tracked.trace_id = util::trace_id_of(*row.traceparent);
    if (namespaces_.controls(row.namespace_name).ordering == store::Ordering::workflow) {
        tracked.workflow_id = row.workflow_id;
        tracked.task_queue = row.task_queue;
    }
    if (!in_flight_.add(std::move(tracked), Clock::now() + timeout + worker.deadline_grace)) {
        // A claim token handed out twice; never expected (see OutboxSession::Commits). Hand
        // the row back rather than track two deliveries under one id.
        spdlog::error("event=duplicate_task_id task_id={}", task_id_for(ref));
        registry_.release(worker.session_id);
        outcomes_.record(store::Outcome::release(ref), row.namespace_name, "");
        return;
    }
    worker::Task task;
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
    task.timeout_ms = timeout.count();
    task.priority = row.priority;
    task.traceparent = std::move(row.traceparent);
    if (auto refused = worker.channel->send_task(task)) {
        // No frame can carry it to this worker (e.g. a row inserted by plain SQL whose input
        // nests too deep): dead-lettered with the reason, at once, instead of failing every
        // delivery.
        (void)in_flight_.take(task.task_id, worker.session_id);
        registry_.release(worker.session_id);
        spdlog::warn("event=row_undeliverable dispatch_key=\"{}\" trace_id={} reason=\"{}\"",
                     util::log_safe(task.dispatch_key),
                     task.traceparent ? util::trace_id_of(*task.traceparent) : "",
                     util::log_safe(*refused));
        outcomes_.record(store::Outcome::fail(ref, std::move(*refused)), row.namespace_name,
                         "failed");
        return;
    }

    metrics_.outstanding(row.namespace_name).Increment();
    // Due -> pushed, each part on one clock: due -> claimed on the database's (visible_after
    // and claimed_at are both its instants), claimed -> pushed on this node's (from the
    // round's submission), so that no two hosts' clocks are ever compared.
    const auto due_to_claimed =
        row.claimed_at ? std::chrono::duration<double>(*row.claimed_at - row.visible_after).count()
                       : 0.0;
    const auto claimed_to_pushed =
        std::chrono::duration<double>(Clock::now() - round_started).count();
    metrics_.dispatch_latency.Observe(std::max(0.0, due_to_claimed) + claimed_to_pushed);
}

void Dispatcher::untrack(const InFlightTask& task) {
    registry_.release(task.session_id);
    metrics_.outstanding(task.namespace_name).Decrement();
}

void Dispatcher::settle(const InFlightTask& task, SettledTask settled) {
    if (settled.outcome.kind == store::Outcome::Kind::fail) {
        spdlog::info("event=dead_letter task_id={}.{} namespace=\"{}\" trace_id={} error=\"{}\"",
                     task.ref.id, task.ref.token, util::log_safe(task.namespace_name),
                     task.trace_id, util::log_safe(settled.outcome.error));
    }
    // Ordered delivery: a row that ended lets the next one of its workflow go; a dead letter
    // does so only where it does not block.
    if (!task.workflow_id.empty()) {
        const auto kind = settled.outcome.kind;
        const bool skip =
            namespaces_.controls(task.namespace_name).on_dead_letter == store::OnDeadLetter::skip;
        if (kind == store::Outcome::Kind::done || (kind == store::Outcome::Kind::fail && skip)) {
            settled.outcome.let_go_workflow = task.workflow_id;
            settled.outcome.let_go_task_queue = task.task_queue;
        }
    }
    outcomes_.record(std::move(settled.outcome), task.namespace_name, std::string{settled.label});
}

Answer Dispatcher::on_complete(const std::string& session_id, const std::string& task_id,
                               std::string result_json) {
    const auto task = in_flight_.take(task_id, session_id);
    if (!task) return Answer::unknown_task;
    untrack(*task);
    std::optional<std::string> kept;
    if (result_json != "null" && !result_json.empty() &&
        namespaces_.keep_results(task->namespace_name)) {
        kept = std::move(result_json);
    }
    settle(*task, completed(*task, std::move(kept)));
    if (backlog_likely_ || sweep_again_) request_sweep();
    check_drained();
    return Answer::accepted;
}

Answer Dispatcher::on_fail(const std::string& session_id, const std::string& task_id,
                           std::string error, bool retryable, std::chrono::milliseconds min_delay) {
    const auto task = in_flight_.take(task_id, session_id);
    if (!task) return Answer::unknown_task;
    untrack(*task);
    settle(*task, failed(*task, Failure::reported,
                         error.empty() ? "worker reported failure" : std::move(error), retryable,
                         failure_policy_, min_delay));
    if (backlog_likely_ || sweep_again_) request_sweep();
    check_drained();
    return Answer::accepted;
}

void Dispatcher::on_worker_lost(const std::string& session_id) {
    const auto lost = in_flight_.take_session(session_id);
    for (const auto& task : lost) {
        untrack(task);
        settle(task, failed(task, Failure::lost, "worker connection lost", true, failure_policy_));
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
    const auto expired = in_flight_.take_expired(Clock::now());
    if (expired.empty()) return;
    const auto why =
        "task timed out after " + std::to_string(settings_.task_timeout.count()) + " ms";
    for (const auto& task : expired) {
        untrack(task);
        spdlog::debug("event=task_timed_out task_id={}.{} namespace=\"{}\" trace_id={}",
                      task.ref.id, task.ref.token, util::log_safe(task.namespace_name),
                      task.trace_id);
        settle(task, failed(task, Failure::timed_out, why, true, failure_policy_));
    }
    spdlog::warn("event=tasks_timed_out count={}", expired.size());
    request_sweep();
    check_drained();
}

void Dispatcher::drain(std::function<void()> done) {
    draining_ = true;
    drained_ = std::move(done);
    maintenance_.pause_reconcile();  // the next owner of the shards reconciles them
    registry_.retire_all();
    check_drained();
}

void Dispatcher::abandon_outstanding(const std::string& reason) {
    for (const auto& task : in_flight_.take_all()) {
        untrack(task);
        settle(task, failed(task, Failure::lost, reason, true, failure_policy_));
    }
    check_drained();
}

void Dispatcher::check_drained() {
    if (!draining_ || !drained_ || !in_flight_.empty() || !outcomes_.idle() || claiming()) return;
    auto done = std::move(drained_);
    drained_ = nullptr;
    done();
}

}  // namespace outboxd::dispatch
