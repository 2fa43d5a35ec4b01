#include "outboxd/dispatch/dispatcher.hpp"

#include <algorithm>

#include <boost/asio/post.hpp>

namespace outboxd::dispatch {
namespace {

// Bounds how often the timeout scan runs: often enough for short test timeouts, rarely
// enough to cost nothing at the default 30 s.
std::chrono::milliseconds timeout_scan_period(std::chrono::milliseconds task_timeout) {
    return std::clamp(task_timeout / 10, std::chrono::milliseconds{5},
                      std::chrono::milliseconds{1000});
}

InFlightSettings in_flight_settings(const DispatchSettings& s) {
    InFlightSettings out;
    out.defaults = {{s.max_attempts, s.backoff}, s.task_timeout};
    // Well within the backstop's grace.
    out.lease_refresh = std::clamp(s.stale_grace / 2, std::chrono::milliseconds{100},
                                   std::chrono::milliseconds{5000});
    out.task_id_suffix = s.task_id_suffix;
    out.database = s.database;
    out.database_index = s.database_index;
    return out;
}

}  // namespace

Dispatcher::Dispatcher(const boost::asio::any_io_executor& loop, DispatchPorts ports,
                       worker::WorkerRegistry& registry, NamespaceCache& namespaces,
                       metrics::DatabaseMetrics& metrics, const DispatchSettings& settings,
                       OwnerSource owner, const util::SteadyNow& now)
    : loop_(loop),
      registry_(registry),
      namespaces_(namespaces),
      metrics_(metrics),
      writes_(ports.writes),
      owner_(std::move(owner)),
      db_(settings.database_index),
      claimer_(loop, ports.rounds, namespaces, metrics,
               {settings.poll_interval, settings.batch_size, settings.claim_lookback}, now,
               [this] { request_sweep(); }),
      tasks_(loop, registry, namespaces, ports.writes, metrics, in_flight_settings(settings),
             timeout_scan_period(settings.task_timeout), now,
             [this] {
                 request_sweep();
                 check_drained();
             }),
      poll_timer_(
          loop, settings.poll_interval, [this] { poll(); }, metrics.fault("timer")) {
    TaskWrites::Events events;
    // Writes landing free the way for drain; recovering writes allow claims again; a full
    // concurrency limit may have room now.
    events.settled = [this] {
        claimer_.slots_freed();
        check_drained();
        request_sweep();
    };
    events.rearmed = [this] { claim_from_front(); };
    events.let_go = [this](const std::vector<QueueKey>& queues) {
        claimer_.woken(queues);
        request_sweep();
    };
    writes_.on_events(std::move(events));
    // Nothing is claimed before the namespaces' controls are known.
    namespaces_.on_loaded([this] { request_sweep(); });
}

void Dispatcher::start() {
    phase_ = Phase::running;
    poll_timer_.start();
    tasks_.start();
    claimer_.start();
    request_sweep();
}

void Dispatcher::stop() {
    phase_ = Phase::stopped;
    poll_timer_.stop();
    tasks_.stop();
    claimer_.stop();
}

std::vector<worker::Route> Dispatcher::routes() const {
    return registry_.routes([this](const std::string& ns) { return namespaces_.placement(ns); },
                            db_);
}

void Dispatcher::poll() {
    if (tasks_.outstanding() > 0) active();
    if (++quiet_polls_ > kQuietPolls && quiet_polls_ % kQuietEvery != 0) return;
    backlog_likely_ = true;  // the backstop: look whatever the last round said
    look();
    claimer_.backstop();
    request_sweep();
}

void Dispatcher::claim_from_front() {
    active();
    claimer_.read_from_front();
    backlog_likely_ = true;
    look();
    request_sweep();
}

void Dispatcher::sink_attached() {
    active();
    claimer_.look_everywhere();  // its routes may have a backlog nobody woke anyone for
    request_sweep();
}

void Dispatcher::ranges_changed() {
    active();
    claimer_.ranges_changed();
    backlog_likely_ = true;
    look();
    request_sweep();
}

void Dispatcher::woken(const std::vector<QueueKey>& queues, bool anywhere) {
    active();
    if (anywhere) claimer_.look_everywhere();
    look();
    // Without a round in flight the next round is as quick; the busy routes' own wakes
    // (their namespaces are in the round) cost nothing more than this look.
    auto to_rounds = queues;
    if (phase_ == Phase::running && writes_.healthy() && claimer_.may_claim_apart(queues)) {
        to_rounds = claimer_.claim_apart(queues, owner_(), routes(), [this](Claimer::Round round) {
            on_claimed_apart(std::move(round));
        });
    }
    claimer_.woken(to_rounds);
    request_sweep();
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
    if (phase_ != Phase::running || !writes_.healthy()) {
        want(false);  // nothing it could claim now: the others take the whole windows
        return check_drained();
    }
    if (!namespaces_.loaded()) return;  // its on_loaded sweeps
    // After a failed round, triggers wait for its backoff (the claimer asks for a sweep then).
    if (!claimer_.ready()) return;
    auto owner = owner_();
    if (owner.ranges.empty()) return want(false);
    auto routes = this->routes();
    const bool credit = std::any_of(routes.begin(), routes.end(),
                                    [](const worker::Route& route) { return route.capacity > 0; });
    claiming_ = true;
    const bool started = claimer_.round(
        std::move(owner), std::move(routes), [this] { return writes_.take_settled(); },
        [this](Claimer::Round round) { on_claimed(std::move(round)); });
    if (started) {
        sweep_again_ = false;
    } else {
        claiming_ = false;
        // With credit and nothing worth a claim, it wants none; without credit it keeps
        // wanting, and a task another database ends sweeps it again.
        if (credit) want(false);
    }
}

void Dispatcher::on_claimed(Claimer::Round round) {
    claiming_ = false;
    if (!round.error.empty()) {
        backlog_likely_ = true;  // the claimer sweeps again after the backoff
        return check_drained();
    }
    auto& result = round.result;
    if (!result.rows.empty()) active();
    // Writes that landed while the round counted may be in its count already.
    if (result.counted) (void)writes_.take_settled();
    backlog_likely_ = result.saturated;
    want(result.saturated);
    // Each row gets its sink (and takes one of its credits) first; then the next round is
    // asked for, so that it runs in the database while this round's tasks are encoded and
    // sent.
    const auto placed = place(result.rows);
    if (result.saturated || sweep_again_) sweep();
    tasks_.push_all(placed, round.started);
    check_drained();
}

void Dispatcher::on_claimed_apart(Claimer::Round round) {
    if (round.error.empty()) tasks_.push_all(place(round.result.rows), round.started);
    request_sweep();  // wakes for its namespaces meanwhile wait for a round
    check_drained();
}

std::vector<TaskBoard::Placed> Dispatcher::place(std::vector<store::OutboxRow>& rows) {
    std::vector<TaskBoard::Placed> placed;
    placed.reserve(rows.size());
    for (auto& row : rows) {
        // Every row claimed counts, whether it is pushed or handed back.
        metrics_.claimed(row.namespace_name).Increment();
        auto* sink = registry_.pick(row, namespaces_.placement(row.namespace_name), db_);
        if (!sink || phase_ != Phase::running || !registry_.reserve(*sink, db_)) {
            // The sink left (or we began draining) between planning and claiming: hand the
            // row back untouched, without consuming an attempt.
            tasks_.release(row);
            continue;
        }
        placed.push_back({sink, &row});
    }
    return placed;
}

sinks::Answer Dispatcher::on_complete(const std::string& session_id, const std::string& task_id,
                                      std::string result_json) {
    const auto answer = tasks_.complete(session_id, task_id, std::move(result_json));
    if (answer == sinks::Answer::accepted) task_ended();
    return answer;
}

sinks::Answer Dispatcher::on_fail(const std::string& session_id, const std::string& task_id,
                                  std::string error, bool retryable,
                                  std::chrono::milliseconds min_delay) {
    const auto answer = tasks_.fail(session_id, task_id, std::move(error), retryable, min_delay);
    if (answer == sinks::Answer::accepted) task_ended();
    return answer;
}

sinks::Answer Dispatcher::on_heartbeat(const std::string& session_id, const std::string& task_id,
                                       std::optional<std::string> progress_json) {
    return tasks_.heartbeat(session_id, task_id, std::move(progress_json));
}

void Dispatcher::cancel_tasks(const std::vector<std::string>& task_ids) { tasks_.cancel(task_ids); }

void Dispatcher::task_ended() {
    if (backlog_likely_ || sweep_again_) request_sweep();
    check_drained();
}

void Dispatcher::on_sink_lost(const std::string& session_id) {
    if (tasks_.sink_lost(session_id) > 0) {
        backlog_likely_ = true;
        request_sweep();
    }
    check_drained();
}

void Dispatcher::expire_timeouts() {
    if (tasks_.expire() == 0) return;
    request_sweep();
    check_drained();
}

void Dispatcher::drain(std::function<void()> done) {
    phase_ = Phase::draining;
    want(false);
    drained_ = std::move(done);
    registry_.retire_all();
    check_drained();
}

void Dispatcher::abandon_outstanding(const std::string& reason) {
    tasks_.abandon_all(reason);
    check_drained();
}

void Dispatcher::check_drained() {
    if (!drained_ || tasks_.outstanding() > 0 || !writes_.idle() || claiming()) return;
    auto done = std::move(drained_);
    drained_ = nullptr;
    done();
}

}  // namespace outboxd::dispatch
