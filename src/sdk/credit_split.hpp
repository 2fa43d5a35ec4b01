#pragma once

// How a worker's credit window is shared over its node connections. Each node serves only its
// own shards, so one may have a backlog while another is idle: every rebalance interval the
// client measures each connection (LoadMeter), turns that into a demand (next_demand) and
// re-splits the window (split_credits); the credit ledger (credit_ledger.hpp) drives them.
// Nothing here reads a clock or sends a frame: time and state are passed in, so every step is
// deterministic and unit-tested.
//
// The policy, in short: a connection whose window was kept full asks for twice its credit,
// any other for what it used plus headroom; idle demand halves each interval. The window is
// then shared max-min fairly over those asks, never below 1 credit per connection (a raise
// waits for room in the window), so that connections with equal demand get equal shares and a
// connection that cannot get enough credit to prove its backlog still grows (a split proportional
// to measured rates would keep whatever split it started from, since a connection's rate is bounded
// by its credit).

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace outboxd::sdk::detail {

// What one connection showed over one rebalance interval.
struct IntervalLoad {
    std::int32_t credit = 0;     // share advertised at the end of the interval
    std::uint64_t received = 0;  // tasks received during it
    double full_fraction = 0;    // share of the interval its window was full (in flight >= credit)
    double mean_in_flight = 0;   // tasks it held, averaged over time
};

// Accumulates an IntervalLoad from the events of one connection. The owner calls advance()
// with the values that held *until* `now`, before it changes the tasks in flight or the
// credit. Not thread-safe.
class LoadMeter {
public:
    using Clock = std::chrono::steady_clock;

    // Starts a fresh interval at `now` (a new connection's hello, or after take()).
    void restart(Clock::time_point now);
    void advance(Clock::time_point now, std::size_t in_flight, std::int32_t credit);
    void count_received() noexcept { ++received_; }
    [[nodiscard]] Clock::duration elapsed(Clock::time_point now) const { return now - since_; }
    // Closes the interval at `now` with the values that held since the last advance(), and
    // starts the next one.
    [[nodiscard]] IntervalLoad take(Clock::time_point now, std::size_t in_flight,
                                    std::int32_t credit);

private:
    Clock::time_point since_{};
    Clock::time_point last_{};
    Clock::duration full_{};
    double in_flight_ns_ = 0;  // integral of tasks in flight over time, in task·ns
    std::uint64_t received_ = 0;
};

// The next smoothed demand of a connection, in credits, from its previous demand and the load
// of the interval just ended; within [0, total]. A connection has a backlog when its window was
// full most of the interval or turned over within it (more tasks arrived than its credit):
// it asks for twice its credit. Otherwise it asks for the tasks it held on average plus half
// again. Demand rises to a larger ask at once and decays towards a smaller one by half per
// interval, so an idle connection falls to the floor within a few intervals.
[[nodiscard]] double next_demand(double previous, const IntervalLoad& load, std::int32_t total);

// One live connection, as split_credits sees it.
struct ConnectionLoad {
    std::int32_t credit = 0;  // share advertised now; 0 before its hello
    double demand = 0;        // from next_demand; a fresh connection: an even share
    // The most tasks it may hold: those it holds, or more while its node may still act on a
    // credit larger than `credit` (a lowered credit on its way). At least `credit`.
    std::int32_t reserved = 0;
};

// Connections outside the split (draining): what they take of the window, and how many of
// them hold any of it.
struct Elsewhere {
    std::int64_t reserved = 0;
    std::int64_t holding = 0;
};

struct CreditSplit {
    std::vector<std::int32_t> shares;  // the new share of each connection, in connection order
    bool waiting = false;  // some connection got less than it should, for want of room yet
};

// The new share of each connection, in connection order:
// - targets: every connection gets at least 1 (so that a node can always signal new work);
//   the rest of `total` is shared max-min fairly over the demands (asks are met from the
//   smallest up, the larger ones share what is left equally; a surplus over every ask raises
//   the smallest shares first). Equal demands give the even split, remainder to the first.
//   The targets sum to max(total, connections).
// - hysteresis: a connection with credit keeps it unless the target differs by 2 or more or
//   by more than 10%, except where that would push the sum over max(total, connections).
// - raises wait for room: a connection takes max(share, reserved) of the window, and a
//   lowered share frees nothing until the caller lowers `reserved`. A raise is granted only
//   as far as the sum over every connection (those `elsewhere` too) stays within `total`, or
//   within one per connection that holds credit or tasks where those are more. A
//   connection's first credit (its hello) comes before any other raise. What cannot be
//   granted yet follows in a later call (`waiting`), once tasks are answered.
// Shares never exceed protocol::kMaxCreditWindow.
[[nodiscard]] CreditSplit split_credits(std::int32_t total,
                                        const std::vector<ConnectionLoad>& connections,
                                        Elsewhere elsewhere = {});

}  // namespace outboxd::sdk::detail
