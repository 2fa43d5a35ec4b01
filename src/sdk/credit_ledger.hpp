#pragma once

// Who holds which part of a worker's credit window: the one place that decides the credit each
// node connection may advertise (its hello, then credit frames). The client tells it what
// happens (a connection opened, drained or closed; a task received or answered; a rebalance
// tick; the settle timer) and sends the frames it returns. Nothing here does I/O or reads a
// clock: times are passed in, so the same scenarios run here, in the Python client and in the
// TypeScript client (tests/vectors/credit_split.json).
//
// The rule it keeps: the tasks the worker holds plus the credit it still offers never exceed
// max_in_flight, summed over its connections as max(credit, tasks held) each. The one
// exception is the floor: every connection that holds credit or tasks may hold 1, so more
// connections than the window hold 1 each. Three things follow:
// - a new connection's hello waits until the window has room for it (its first credit is 1 or
//   more; a hello cannot ask for 0), e.g. while the seed still holds a full window;
// - a lowered credit still counts at its old value until the node must have seen it: each
//   answer sent after the credit frame lowers that count by one (the node reads the frame
//   first, and no longer refills past the new credit), and `settle` after the frame the rest
//   is released (a node reads its frames within that);
// - a draining connection takes no credit, but its tasks count until they are answered.
//
// Not thread-safe: the client's network thread owns it.

#include <chrono>
#include <cstdint>
#include <optional>
#include <vector>

#include "credit_split.hpp"

namespace outboxd::sdk::detail {

// How long a lowered credit counts at its old value when no answer proves the node saw it.
inline constexpr std::chrono::milliseconds kCreditSettle{1000};

class CreditLedger {
public:
    using Clock = LoadMeter::Clock;
    using Id = std::uint64_t;  // the caller's name for a connection

    struct Settings {
        std::int32_t window = 1;
        Clock::duration rebalance_interval{};  // zero: the even split, no demand measured
        Clock::duration settle = kCreditSettle;
    };

    // A frame to send: the connection's hello with its first credit, or a credit frame.
    struct Frame {
        Id connection = 0;
        bool hello = false;
        std::int32_t credit = 0;

        friend bool operator==(const Frame&, const Frame&) = default;
    };
    using Frames = std::vector<Frame>;

    explicit CreditLedger(Settings settings) : settings_(settings) {}

    // Each event returns the frames to send now, in the order the connections opened.
    // A connection upgraded: it gets its hello once the window has room for it.
    [[nodiscard]] Frames open(Id id, Clock::time_point now);
    // Its node said drain: it sends nothing new; its tasks still count.
    [[nodiscard]] Frames drain(Id id, Clock::time_point now);
    // The connection is gone, and its tasks with it (the node re-arms them).
    [[nodiscard]] Frames close(Id id, Clock::time_point now);
    void received(Id id, Clock::time_point now);
    // An answer went out on the connection (after every credit frame sent before it).
    [[nodiscard]] Frames answered(Id id, Clock::time_point now);
    // Every rebalance interval: each connection's demand from its last interval, then a new
    // split.
    [[nodiscard]] Frames tick(Clock::time_point now);
    // The settle timer (see settle_due).
    [[nodiscard]] Frames settle(Clock::time_point now);

    // When the earliest lowered credit is released, if one waits.
    [[nodiscard]] std::optional<Clock::time_point> settle_due() const;
    [[nodiscard]] std::int32_t credit(Id id) const;

private:
    struct Connection {
        Id id = 0;
        bool draining = false;
        std::int32_t credit = 0;        // advertised; 0 until the hello (and once draining)
        std::int32_t offered = 0;       // the most its node may still act on, at least `credit`
        Clock::time_point settle_at{};  // when `offered` falls back to `credit` at the latest
        std::int32_t in_flight = 0;
        double demand = 0;
        LoadMeter meter;
    };

    [[nodiscard]] Connection* find(Id id);
    void release(Clock::time_point now);
    void set_credit(Connection& connection, std::int32_t credit, Clock::time_point now) const;
    [[nodiscard]] Frames rebalance(Clock::time_point now);

    const Settings settings_;
    std::vector<Connection> connections_;  // in the order opened
    bool waiting_ = false;                 // some share is short of what the split wants
};

}  // namespace outboxd::sdk::detail
