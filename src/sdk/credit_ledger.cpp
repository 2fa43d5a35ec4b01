#include "credit_ledger.hpp"

#include <algorithm>

namespace outboxd::sdk::detail {

CreditLedger::Frames CreditLedger::open(Id id, Clock::time_point now) {
    release(now);
    Connection connection;
    connection.id = id;
    connection.meter.restart(now);
    connections_.push_back(connection);
    return rebalance(now);
}

CreditLedger::Frames CreditLedger::drain(Id id, Clock::time_point now) {
    release(now);
    Connection* connection = find(id);
    if (!connection || connection->draining) return {};
    set_credit(*connection, 0, now);
    connection->draining = true;
    return rebalance(now);
}

CreditLedger::Frames CreditLedger::close(Id id, Clock::time_point now) {
    release(now);
    const auto it = std::find_if(connections_.begin(), connections_.end(),
                                 [id](const Connection& c) { return c.id == id; });
    if (it == connections_.end()) return {};
    connections_.erase(it);
    return rebalance(now);
}

void CreditLedger::received(Id id, Clock::time_point now) {
    Connection* connection = find(id);
    if (!connection) return;
    connection->meter.advance(now, static_cast<std::size_t>(connection->in_flight),
                              connection->credit);
    connection->meter.count_received();
    ++connection->in_flight;
}

CreditLedger::Frames CreditLedger::answered(Id id, Clock::time_point now) {
    release(now);
    Connection* connection = find(id);
    if (!connection) return {};
    connection->meter.advance(now, static_cast<std::size_t>(connection->in_flight),
                              connection->credit);
    connection->in_flight = std::max(connection->in_flight - 1, 0);
    // The node reads the credit frames sent before this answer first: it no longer refills
    // this connection past its credit, so what it may still hold shrinks with each answer.
    connection->offered = std::max(connection->offered - 1, connection->credit);
    return waiting_ ? rebalance(now) : Frames{};
}

CreditLedger::Frames CreditLedger::tick(Clock::time_point now) {
    release(now);
    if (settings_.rebalance_interval > Clock::duration::zero()) {
        for (auto& connection : connections_) {
            // A connection without credit has shown nothing; one opened late in the interval
            // keeps its first demand until the next tick.
            if (connection.draining || connection.credit == 0) continue;
            if (connection.meter.elapsed(now) < settings_.rebalance_interval / 2) continue;
            const auto load = connection.meter.take(
                now, static_cast<std::size_t>(connection.in_flight), connection.credit);
            connection.demand = next_demand(connection.demand, load, settings_.window);
        }
    }
    return rebalance(now);
}

CreditLedger::Frames CreditLedger::settle(Clock::time_point now) {
    release(now);
    return waiting_ ? rebalance(now) : Frames{};
}

std::optional<CreditLedger::Clock::time_point> CreditLedger::settle_due() const {
    std::optional<Clock::time_point> due;
    for (const auto& connection : connections_) {
        if (connection.offered > connection.credit && (!due || connection.settle_at < *due)) {
            due = connection.settle_at;
        }
    }
    return due;
}

std::int32_t CreditLedger::credit(Id id) const {
    for (const auto& connection : connections_) {
        if (connection.id == id) return connection.credit;
    }
    return 0;
}

CreditLedger::Connection* CreditLedger::find(Id id) {
    for (auto& connection : connections_) {
        if (connection.id == id) return &connection;
    }
    return nullptr;
}

void CreditLedger::release(Clock::time_point now) {
    for (auto& connection : connections_) {
        if (connection.offered > connection.credit && connection.settle_at <= now) {
            connection.offered = connection.credit;
        }
    }
}

void CreditLedger::set_credit(Connection& connection, std::int32_t credit,
                              Clock::time_point now) const {
    connection.meter.advance(now, static_cast<std::size_t>(connection.in_flight),
                             connection.credit);
    if (credit < connection.credit) connection.settle_at = now + settings_.settle;
    connection.offered = std::max({connection.offered, connection.credit, credit});
    connection.credit = credit;
}

CreditLedger::Frames CreditLedger::rebalance(Clock::time_point now) {
    std::vector<Connection*> live;
    Elsewhere elsewhere;
    for (auto& connection : connections_) {
        if (!connection.draining) {
            live.push_back(&connection);
            continue;
        }
        const auto taken = std::max(connection.offered, connection.in_flight);
        elsewhere.reserved += taken;
        if (taken > 0) ++elsewhere.holding;
    }
    if (live.empty()) {
        waiting_ = false;
        return {};
    }
    const bool rebalancing = settings_.rebalance_interval > Clock::duration::zero();
    std::vector<ConnectionLoad> loads;
    loads.reserve(live.size());
    for (Connection* connection : live) {
        // A fresh connection starts from an even share of the demand.
        if (rebalancing && connection->credit == 0) {
            connection->demand =
                static_cast<double>(settings_.window) / static_cast<double>(live.size());
        }
        loads.push_back({connection->credit, rebalancing ? connection->demand : 0.0,
                         std::max(connection->offered, connection->in_flight)});
    }
    const auto split = split_credits(settings_.window, loads, elsewhere);
    waiting_ = split.waiting;
    Frames frames;
    for (std::size_t i = 0; i < live.size(); ++i) {
        Connection& connection = *live[i];
        const auto share = split.shares[i];
        if (share == connection.credit) continue;
        const bool hello = connection.credit == 0;
        set_credit(connection, share, now);
        if (hello) connection.meter.restart(now);
        frames.push_back({connection.id, hello, share});
    }
    return frames;
}

}  // namespace outboxd::sdk::detail
