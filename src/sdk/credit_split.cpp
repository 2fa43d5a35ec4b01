#include "credit_split.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <numeric>
#include <utility>

#include "outboxd/worker/protocol.hpp"

namespace outboxd::sdk::detail {
namespace {

// A window full for at least this share of the interval counts as kept full.
constexpr double kFullMostOfInterval = 0.5;
// A connection with a backlog asks for this multiple of its credit (at least one more): growth
// is geometric, so a connection squeezed to the floor reaches an even share in a few intervals.
constexpr double kBacklogGrowth = 2.0;
// A connection without a backlog asks for what it held on average times this.
constexpr double kHeadroom = 1.5;
// Weight of the previous demand when the new ask is smaller: idle demand halves per interval.
constexpr double kDecay = 0.5;
// Hysteresis: a share changes only by at least this many credits or by more than this fraction.
constexpr std::int32_t kMinStep = 2;
constexpr double kMinChange = 0.1;
// Fractional parts are compared at this resolution, so that float noise cannot reorder ties.
constexpr double kFractionResolution = 1e6;

using Shares = std::vector<std::int32_t>;

// Exact shares summing to `total` (> asks.size()), each asks[i] >= 1 (see split_credits).
std::vector<double> fill(double total, const std::vector<double>& asks) {
    const std::size_t n = asks.size();
    std::vector<std::size_t> order(n);
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::stable_sort(order.begin(), order.end(),
                     [&asks](std::size_t a, std::size_t b) { return asks[a] < asks[b]; });
    std::vector<double> exact(n);
    double remaining = total;
    if (std::accumulate(asks.begin(), asks.end(), 0.0) >= total) {
        // Not enough for every ask: the smallest asks in full, the rest an equal level.
        std::size_t k = 0;
        for (; k < n; ++k) {
            const std::size_t i = order[k];
            if (asks[i] * static_cast<double>(n - k) > remaining) break;
            exact[i] = asks[i];
            remaining -= asks[i];
        }
        const double level = k < n ? remaining / static_cast<double>(n - k) : 0;
        for (; k < n; ++k) exact[order[k]] = level;
    } else {
        // More than every ask: the largest asks as they are, the rest raised to a common level.
        std::size_t k = n;
        for (; k > 0; --k) {
            const std::size_t i = order[k - 1];
            if (asks[i] * static_cast<double>(k) < remaining) break;
            exact[i] = asks[i];
            remaining -= asks[i];
        }
        const double level = k > 0 ? remaining / static_cast<double>(k) : 0;
        for (std::size_t j = 0; j < k; ++j) exact[order[j]] = level;
    }
    return exact;
}

// Whole shares summing to `total`: each exact share rounded down (never below 1), then the
// credits left one each to the largest fractional parts, ties to the first connections.
Shares round_shares(const std::vector<double>& exact, std::int64_t total) {
    const std::size_t n = exact.size();
    Shares shares(n);
    std::vector<std::int64_t> fraction(n);
    std::int64_t given = 0;
    for (std::size_t i = 0; i < n; ++i) {
        const double whole = std::max(1.0, std::floor(exact[i] + 1 / kFractionResolution));
        shares[i] = static_cast<std::int32_t>(whole);
        fraction[i] = std::llround((exact[i] - whole) * kFractionResolution);
        given += shares[i];
    }
    std::vector<std::size_t> order(n);
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::stable_sort(order.begin(), order.end(), [&fraction](std::size_t a, std::size_t b) {
        return fraction[a] > fraction[b];
    });
    for (std::size_t k = 0; given < total; ++k, ++given) ++shares[order[k % n]];
    return shares;
}

bool worth_changing(std::int32_t credit, std::int32_t target) {
    const auto change = std::abs(target - credit);
    return change >= kMinStep || change > kMinChange * credit;
}

}  // namespace

void LoadMeter::restart(Clock::time_point now) {
    since_ = now;
    last_ = now;
    full_ = {};
    in_flight_ns_ = 0;
    received_ = 0;
}

void LoadMeter::advance(Clock::time_point now, std::size_t in_flight, std::int32_t credit) {
    const auto span = now - last_;
    if (span <= Clock::duration::zero()) return;
    last_ = now;
    if (credit > 0 && in_flight >= static_cast<std::size_t>(credit)) full_ += span;
    in_flight_ns_ +=
        static_cast<double>(in_flight) *
        static_cast<double>(std::chrono::duration_cast<std::chrono::nanoseconds>(span).count());
}

IntervalLoad LoadMeter::take(Clock::time_point now, std::size_t in_flight, std::int32_t credit) {
    advance(now, in_flight, credit);
    IntervalLoad load;
    load.credit = credit;
    load.received = received_;
    const auto span = std::chrono::duration_cast<std::chrono::nanoseconds>(now - since_).count();
    if (span > 0) {
        load.full_fraction =
            static_cast<double>(
                std::chrono::duration_cast<std::chrono::nanoseconds>(full_).count()) /
            static_cast<double>(span);
        load.mean_in_flight = in_flight_ns_ / static_cast<double>(span);
    }
    restart(now);
    return load;
}

double next_demand(double previous, const IntervalLoad& load, std::int32_t total) {
    // "Turned over" is strict: a node that sends exactly its credit in one burst has shown
    // no more than that, and a connection at the floor would otherwise count a single task.
    const bool backlog =
        load.credit > 0 && (load.full_fraction >= kFullMostOfInterval ||
                            load.received > static_cast<std::uint64_t>(load.credit));
    const double ask = backlog ? std::max(load.credit * kBacklogGrowth, load.credit + 1.0)
                               : load.mean_in_flight * kHeadroom;
    const double smoothed = kDecay * previous + (1 - kDecay) * ask;
    return std::clamp(std::max(ask, smoothed), 0.0, static_cast<double>(std::max(total, 0)));
}

CreditSplit split_credits(std::int32_t total, const std::vector<ConnectionLoad>& connections,
                          Elsewhere elsewhere) {
    const std::size_t n = connections.size();
    if (n == 0) return {};
    const std::int64_t bound = std::max<std::int64_t>(total, static_cast<std::int64_t>(n));

    // Targets.
    Shares shares(n, 1);
    if (bound > static_cast<std::int64_t>(n)) {
        std::vector<double> asks(n);
        for (std::size_t i = 0; i < n; ++i) asks[i] = std::max(1.0, connections[i].demand);
        shares = round_shares(fill(static_cast<double>(bound), asks), bound);
    }
    const Shares targets = shares;

    // Hysteresis. Kept shares may add up past the bound only through decreases held back;
    // those are given up, largest first, until the sum fits.
    std::int64_t sum = 0;
    std::vector<std::size_t> held_back;
    for (std::size_t i = 0; i < n; ++i) {
        const auto credit = connections[i].credit;
        if (credit > 0 && !worth_changing(credit, targets[i])) {
            if (credit > targets[i]) held_back.push_back(i);
            shares[i] = credit;
        }
        sum += shares[i];
    }
    std::stable_sort(held_back.begin(), held_back.end(), [&](std::size_t a, std::size_t b) {
        return shares[a] - targets[a] > shares[b] - targets[b];
    });
    for (const auto i : held_back) {
        if (sum <= bound) break;
        sum -= shares[i] - targets[i];
        shares[i] = targets[i];
    }
    const Shares wanted = shares;

    // Raises wait for room: a connection takes max(share, reserved) of the window.
    std::int64_t held = elsewhere.reserved;
    std::int64_t holding = elsewhere.holding;
    Shares from(n);  // where each raise starts: its credit, or what it may hold already
    for (std::size_t i = 0; i < n; ++i) {
        const auto occupied = std::max(connections[i].credit, connections[i].reserved);
        from[i] = shares[i] > connections[i].credit ? std::min(occupied, shares[i]) : shares[i];
        const auto taken = std::max(from[i], occupied);
        held += taken;
        if (taken > 0) ++holding;
    }
    // First credits: one each, past `total` only as the floor of a connection that holds any.
    for (std::size_t i = 0; i < n; ++i) {
        if (from[i] == 0 && shares[i] > 0 &&
            held + 1 <= std::max<std::int64_t>(total, holding + 1)) {
            from[i] = 1;
            ++held;
            ++holding;
        }
    }
    std::int64_t room = std::max<std::int64_t>(std::max<std::int64_t>(total, holding) - held, 0);
    CreditSplit split;
    for (std::size_t i = 0; i < n; ++i) {
        const auto grant = from[i] > 0 ? std::min<std::int64_t>(shares[i] - from[i], room) : 0;
        room -= grant;
        shares[i] = static_cast<std::int32_t>(
            std::min<std::int64_t>(from[i] + grant, worker::protocol::kMaxCreditWindow));
        if (shares[i] < wanted[i]) split.waiting = true;
    }
    split.shares = std::move(shares);
    return split;
}

}  // namespace outboxd::sdk::detail
