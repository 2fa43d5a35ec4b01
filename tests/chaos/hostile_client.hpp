#pragma once

// Sends a node every hostile payload (hostile_payloads.hpp), then joins as a worker that
// takes real tasks and answers them badly: a huge nested result, a malformed fail, a second
// complete, a complete under a wrong token, and a disconnect with tasks unanswered.
// The tasks it receives and the completes it sends go to a delivery log in outboxd-worker's
// format, written before each answer leaves, so the checker accounts for them like any
// worker's. attack() may run for several nodes at once from several threads.

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace outboxd::chaos {

class RawSocket;

struct HostileTally {
    int connections = 0;       // payloads sent on an open connection
    int not_connected = 0;     // payloads whose connection was refused (node down)
    int upgrades_refused = 0;  // WebSocket payloads whose upgrade failed
    int tasks_taken = 0;       // tasks the hostile worker received
    int tasks_completed = 0;   // of which it completed (validly, apart from its result)
    // Payloads after which the node no longer answered a health check: it died or hung.
    std::vector<std::string> suspects;
};

class HostileClient {
public:
    explicit HostileClient(std::string delivery_log) : delivery_log_(std::move(delivery_log)) {}

    // Every payload, then the misbehaving worker, against the node on `port`.
    [[nodiscard]] HostileTally attack(std::uint16_t port) const;

private:
    struct Attack {
        std::uint16_t port = 0;
        HostileTally tally;
    };

    // Sends one payload on a fresh connection (`payload` gets the socket once connected and
    // returns false when the upgrade it needs failed), then checks the node's health: a
    // node that no longer answers has the payload recorded as a suspect.
    void send(Attack& attack, const std::string& name,
              const std::function<bool(RawSocket&)>& payload) const;
    bool misbehave_as_worker(RawSocket& socket, HostileTally& tally) const;

    std::string delivery_log_;
};

}  // namespace outboxd::chaos
