#include "outboxd/dispatch/claim_limits.hpp"

#include <algorithm>
#include <cmath>

namespace outboxd::dispatch {
namespace {

using Clock = ClaimLimits::Clock;

// When a limit that left no room may leave some: a rate limit's next claim's worth of
// tokens, or, for a concurrency limit (whose rows end elsewhere, unseen), a short rest.
constexpr std::chrono::milliseconds kBusyTypeRest{20};
constexpr std::chrono::milliseconds kMinTokenWait{5};
constexpr std::chrono::milliseconds kTokenCadence{20};
constexpr double kMaxTokenWaitSeconds = 60;

// Until the bucket holds a claim's worth of tokens: what kTokenCadence brings (at least one,
// at most the burst), so that a fast rate is claimed in a few rows a claim, not one.
std::chrono::milliseconds token_wait(double tokens, const store::RateLimit& rate) {
    const double wanted = std::clamp(rate.per_second * kTokenCadence.count() / 1000.0, 1.0,
                                     static_cast<double>(rate.burst));
    // Capped: a rate set by plain SQL below the API's bound must not overflow the wait (the
    // route is looked at again then, and waits again).
    const double seconds =
        std::min(kMaxTokenWaitSeconds, std::max(0.0, wanted - tokens) / rate.per_second);
    return std::max(kMinTokenWait, std::chrono::milliseconds{
                                       static_cast<std::int64_t>(std::ceil(seconds * 1000))});
}

}  // namespace

ClaimLimits::Verdict ClaimLimits::judge(const store::ClaimStore::LimitFacts& facts,
                                        std::size_t taken) {
    Verdict verdict;
    const auto rest = [&verdict] {
        verdict.wait = kBusyTypeRest;
        verdict.full = true;
    };
    // No room at all: the type's slots were taken, or a bucket (the last one read) had no
    // whole token.
    if (facts.type_room && *facts.type_room <= 0) rest();
    if (!facts.buckets.empty() && std::floor(facts.buckets.back().tokens) < 1) {
        verdict.wait = token_wait(facts.buckets.back().tokens, facts.buckets.back().rate);
    }
    // Filled to its limit: the next claim waits for a slot instead of finding none.
    if (facts.type_room && *facts.type_room > 0 &&
        static_cast<std::int64_t>(taken) >= *facts.type_room) {
        rest();
    }
    // Spent: the next claim waits for tokens instead of finding none.
    const auto spent = static_cast<double>(taken);
    for (const auto& bucket : facts.buckets) {
        const double left = std::max(0.0, bucket.tokens - spent);
        if (spent > 0 && left < 1) {
            const auto wait = token_wait(left, bucket.rate);
            verdict.wait = verdict.wait ? std::max(*verdict.wait, wait) : wait;
        }
    }
    return verdict;
}

std::optional<Clock::time_point> ClaimLimits::Parts::held(const std::string& ns,
                                                          const std::string& type,
                                                          bool namespace_rate,
                                                          Clock::time_point now) const {
    const auto until_of = [&](const std::string& key_type) {
        const auto it = until.find({ns, key_type});
        return it == until.end() ? Clock::time_point{} : it->second;
    };
    const auto own = until_of(type);
    const auto rate = until_of("");
    if (own <= now && !(namespace_rate && rate > now)) return std::nullopt;
    return std::max(own, rate);  // both must let it go
}

std::optional<std::chrono::milliseconds> ClaimLimits::Parts::learn(
    const std::string& ns, const store::ClaimStore::ClaimControls& controls, const Verdict& verdict,
    Clock::time_point now) {
    if (!verdict.wait) return std::nullopt;
    // A claim limited by its namespace's rate alone holds the namespace; any other holds
    // its type (the part with a limit of its own).
    const bool namespace_only =
        controls.namespace_rate && !controls.type_rate && !controls.max_in_flight;
    const Key key{ns, namespace_only ? std::string{} : controls.activity_type};
    until[key] = now + *verdict.wait;
    if (verdict.full) full.insert(key);
    return verdict.wait;
}

void ClaimLimits::Parts::slots_freed() {
    for (const auto& key : full) until.erase(key);
    full.clear();
}

ClaimLimits::ClaimLimits(const boost::asio::any_io_executor& loop, std::function<void()> look_again)
    : look_again_(std::move(look_again)), timer_(loop) {}

void ClaimLimits::round_learned(Parts parts, const std::vector<HeldRoute>& routes,
                                Clock::time_point now) {
    parts_ = std::move(parts);
    lent_ = false;
    if (std::exchange(freed_during_round_, false)) parts_.slots_freed();
    hold(routes, now);
}

void ClaimLimits::hold(const std::vector<HeldRoute>& routes, Clock::time_point now) {
    // A limit that left rows unclaimed says when it may let some go: the route is left out
    // of the rounds until then (no rounds, no statements while it has no room), and a round
    // is claimed then.
    std::optional<std::chrono::milliseconds> soonest;
    for (const auto& route : routes) {
        soonest = soonest ? std::min(*soonest, route.wait) : route.wait;
        routes_[route.scope] = {now + route.wait, route.full};
    }
    if (!soonest) return;
    const auto at = now + *soonest;
    if (timer_at_ && *timer_at_ <= at) return;
    timer_at_ = at;
    timer_.expires_at(at);
    timer_.async_wait([this, watch = lifetime_.watch()](auto ec) {
        if (ec || watch.expired()) return;
        timer_at_.reset();
        look_again_();
    });
}

void ClaimLimits::drop_held(std::vector<worker::Route>& routes, Clock::time_point now) {
    if (routes_.empty()) return;
    std::erase_if(routes_, [now](const auto& entry) { return entry.second.until <= now; });
    std::erase_if(routes,
                  [this](const worker::Route& route) { return routes_.contains(route.scope); });
}

void ClaimLimits::slots_freed() {
    std::erase_if(routes_, [](const auto& entry) { return entry.second.full; });
    parts_.slots_freed();
    if (lent_) freed_during_round_ = true;
}

}  // namespace outboxd::dispatch
