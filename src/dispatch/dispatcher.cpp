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
    maintenance.stale_grace = settings.stale_grace;
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
      task_defaults_{{settings.max_attempts, settings.backoff}, settings.task_timeout},
      lease_refresh_(std::clamp(settings.stale_grace / 2, std::chrono::milliseconds{100},
                                std::chrono::milliseconds{5000})),
      owner_(std::move(owner)),
      outcomes_(loop, lanes.outcomes, metrics, settings.max_outcome_batch),
      leases_(loop, lanes.outcomes, metrics),
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
    for (const auto& ns : names) {
        const auto& controls = namespaces_.controls(ns);
        if (controls.shapes_claims()) out.emplace(ns, controls);
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
        settle(task, failed(task, Failure::lost, reason, true));
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
