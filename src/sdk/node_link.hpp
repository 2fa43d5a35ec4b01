#pragma once

// One node URL the client keeps a connection to, across reconnects: the connection of the
// moment, its tasks, and the reconnect schedule (its credit is the ClientCore's ledger's).
// Network thread only; the ClientCore drives it.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include "outboxd/util/retry_backoff.hpp"
#include "responder_state.hpp"
#include "ws_url.hpp"

namespace outboxd::sdk::detail {

struct NodeLink {
    enum class Phase {
        waiting,     // no connection; a reconnect is scheduled
        connecting,  // connection started, not upgraded yet
        open,        // upgraded: takes part in the credit split (its hello waits for room)
        draining,    // the node said drain: answer what it sent, expect nothing new
        dormant,     // drained and gone; a learned node waits to be listed again
    };

    NodeLink(boost::asio::io_context& ioc, std::string url_text, WsUrl parsed, bool is_seed,
             util::RetryBackoff reconnect_backoff)
        : url(std::move(url_text)),
          ws_url(std::move(parsed)),
          seed(is_seed),
          backoff(reconnect_backoff),
          retry_timer(ioc) {}

    std::string url;
    WsUrl ws_url;
    bool seed;
    std::optional<std::string> node_id;  // from the cluster list or the node's welcome
    Phase phase = Phase::waiting;
    std::uint64_t connection_id = 0;   // 0: no connection
    std::uint64_t attempts = 0;        // connections started, for the reconnect counter
    std::uint64_t failures = 0;        // attempts in a row that failed before the upgrade
    std::size_t max_result_bytes = 0;  // from the node's welcome; 0: not stated
    // Tasks received on the current connection and not answered yet. Cleared when the
    // connection ends: the node re-arms them, so late answers are dropped.
    std::unordered_map<std::string, std::shared_ptr<Responder::State>> in_flight;
    util::RetryBackoff backoff;
    boost::asio::steady_timer retry_timer;
};

}  // namespace outboxd::sdk::detail
