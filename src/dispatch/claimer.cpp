#include "outboxd/dispatch/claimer.hpp"

#include <algorithm>
#include <random>

namespace outboxd::dispatch {

Claimer::Claimer(const boost::asio::any_io_executor& loop, RoundRunner& runner,
                 NamespaceCache& namespaces, metrics::DatabaseMetrics& metrics, Settings settings,
                 util::SteadyNow now, std::function<void()> look_again)
    : runner_(runner),
      namespaces_(namespaces),
      metrics_(metrics),
      settings_(settings),
      now_(std::move(now)),
      state_(std::make_shared<ClaimerState>(settings.lookback)),
      limits_(loop, look_again),
      faults_({.database = metrics.database()}, std::random_device{}()),
      marks_(settings.poll_interval),
      look_again_(std::move(look_again)),
      retry_timer_(loop) {}

void Claimer::stop() {
    retry_timer_.cancel();
    limits_.stop();
}

void Claimer::read_from_front() {
    marks_.read_from_front();
    activity_.look_everywhere();  // the rows put back in line may be on any route
}

void Claimer::ranges_changed() {
    marks_.ranges_changed();
    read_from_front();
}

void Claimer::backstop() {
    // Rows due by now on any route (backoffs ended, scheduled rows, rows behind where claims
    // read on): probe the inactive routes, read the active ones from the front.
    if (marks_.backstop_due(now_())) activity_.look_everywhere();
}

bool Claimer::ready() const {
    return !faults_.waiting(now_()) && !(marks_.releasing() && apart_.running);
}

std::map<std::string, store::DeliveryControls> Claimer::controls_of(
    const std::set<std::string>& names) const {
    std::map<std::string, store::DeliveryControls> out;
    if (!namespaces_.any_controls()) return out;
    for (const auto& ns : names) {
        const auto& controls = namespaces_.controls(ns);
        if (controls.shapes_claims()) out.emplace(ns, controls);
    }
    return out;
}

bool Claimer::round(store::Owner owner, std::vector<worker::Route> routes,
                    const SettledSource& take_settled, const Done& done) {
    const auto now = now_();
    faults_.drop_resting(routes, now);
    limits_.drop_held(routes, now);
    if (!apart_.in_apart.empty()) {
        std::erase_if(routes, [this](const worker::Route& route) {
            return apart_.in_apart.contains(route.scope.namespace_name);
        });
    }
    // Only routes known to have due rows are claimed; the others are probed when rows may
    // have become due anywhere. An idle route costs nothing.
    auto split = activity_.split(routes, now);
    if (split.claim.empty() && split.probe.empty()) return false;

    std::map<std::string, std::int64_t> quotas;
    std::map<std::string, std::int64_t> weights;
    apart_.in_round.clear();
    for (const auto* list : {&split.claim, &split.probe}) {
        for (const auto& route : *list) {
            const auto& ns = route.scope.namespace_name;
            if (!quotas.contains(ns)) {
                quotas.emplace(ns, namespaces_.quota(ns));
                weights.emplace(ns, namespaces_.weight(ns));
                apart_.in_round.insert(ns);
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
    request.batch_size = settings_.batch_size;
    request.generations = marks_.generations();
    request.settled = take_settled();
    request.claimed_apart = std::exchange(apart_.claimed, {});
    request.controls = controls_of(apart_.in_round);
    request.parts = limits_.lend_parts();
    claiming_ = true;
    const bool queued =
        runner_.round(std::move(request), state_, marks_.release(), lifetime_.watch(),
                      [this, started = now, done](store::LaneResult<ClaimRoundResult> result) {
                          Round round{std::move(result.value), std::move(result.error), started,
                                      std::chrono::duration<double>(now_() - started).count()};
                          finish(round);
                          done(std::move(round));
                      });
    if (!queued) {
        // Only one round is ever in flight, so a full claims lane means a stalled database.
        // The refused round took the settled counts with it: count again next time.
        state_->tally.known = false;
        Round round{{}, "the claims lane is full", now, 0.0};
        finish(round);
        done(std::move(round));
    }
    return true;
}

void Claimer::finish(Round& round) {
    claiming_ = false;
    apart_.in_round.clear();
    metrics_.claim_seconds.Observe(round.seconds);
    const auto now = now_();
    if (!round.error.empty()) {
        // The next round waits for the backoff, whatever triggers it meanwhile, and looks
        // everywhere: what the failed round was to probe is unknown still.
        marks_.claim_failed();
        activity_.look_everywhere();
        retry_timer_.expires_after(faults_.round_failed(round.error, now));
        retry_timer_.async_wait([this, watch = lifetime_.watch()](auto ec) {
            if (!ec && !watch.expired()) look_again_();
        });
        return;
    }
    faults_.round_succeeded(now);
    for (const auto& [scope, why] : round.result.refused) {
        metrics_.claim_route_errors_total.Increment();
        faults_.route_refused(scope, why, now);
    }
    marks_.round_succeeded(round.result, round.seconds);
    activity_.settled(round.result.found, round.result.came_back_short, now);
    limits_.round_learned(std::move(round.result.parts), round.result.held, now);
}

bool Claimer::may_claim_apart(const std::vector<QueueKey>& queues) const {
    return claiming_ && !apart_.running && !marks_.releasing() && !faults_.waiting(now_()) &&
           namespaces_.loaded() &&
           std::any_of(queues.begin(), queues.end(),
                       [this](const QueueKey& q) { return !apart_.in_round.contains(q.first); });
}

std::vector<Claimer::QueueKey> Claimer::claim_apart(const std::vector<QueueKey>& queues,
                                                    store::Owner owner,
                                                    std::vector<worker::Route> routes,
                                                    const Done& done) {
    const auto now = now_();
    if (owner.ranges.empty()) return queues;
    const std::set<QueueKey> woken(queues.begin(), queues.end());
    faults_.drop_resting(routes, now);
    limits_.drop_held(routes, now);
    // A queue is claimed apart only when none of its routes is active (the rounds serve
    // those) and its namespace is not in the round in flight.
    std::set<QueueKey> to_rounds;
    std::vector<worker::Route> apart;
    for (auto& route : routes) {
        QueueKey key{route.scope.namespace_name, route.scope.task_queue};
        if (!woken.contains(key)) continue;
        if (activity_.active(route.scope) || apart_.in_round.contains(key.first)) {
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
        apart_.in_apart.insert(ns);
    }
    std::vector<QueueKey> rest;
    for (const auto& queue : queues) {
        if (!apart_.in_apart.contains(queue.first) || to_rounds.contains(queue))
            rest.push_back(queue);
    }
    ClaimRequest request;
    request.owner = std::move(owner);
    request.routes = std::move(apart);
    request.quota = [quotas](const std::string& ns) { return quotas.at(ns); };
    request.batch_size = settings_.apart_batch;
    request.controls = controls_of(apart_.in_apart);
    apart_.running = true;
    const bool queued =
        runner_.apart(std::move(request), lifetime_.watch(),
                      [this, started = now, done](store::LaneResult<ClaimRoundResult> result) {
                          Round round{std::move(result.value), std::move(result.error), started,
                                      std::chrono::duration<double>(now_() - started).count()};
                          finish_apart(round);
                          done(std::move(round));
                      });
    if (!queued) {
        Round round{{}, "the claims-apart lane is full", now, 0.0};
        finish_apart(round);
        done(std::move(round));
    }
    return rest;
}

void Claimer::finish_apart(Round& round) {
    apart_.running = false;
    apart_.in_apart.clear();
    metrics_.claims_apart_total.Increment();
    if (!round.error.empty()) {
        // The rounds' own failures pace the retries: a claim apart is only ever a shortcut.
        // What it was to claim is for the rounds now.
        marks_.claim_failed();
        activity_.look_everywhere();
        return;
    }
    const auto now = now_();
    for (const auto& [scope, why] : round.result.refused) {
        metrics_.claim_route_errors_total.Increment();
        faults_.route_refused(scope, why, now);
    }
    marks_.seen(round.result);
    activity_.settled(round.result.found, round.result.came_back_short, now);
    limits_.hold(round.result.held, now);
    for (const auto& row : round.result.rows) ++apart_.claimed[row.namespace_name];
}

}  // namespace outboxd::dispatch
