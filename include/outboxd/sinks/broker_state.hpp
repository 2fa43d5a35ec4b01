#pragma once

// What a broker target's channel (NATS, AMQP) keeps of its own state, the same way for every
// broker: whether it is connected (logged when it changes, and a gauge), the messages out and
// how they ended (metrics), its latest error, and what it has not reported to the database
// yet (store::TargetReport). Loop thread only.

#include <optional>
#include <string>

#include <prometheus/counter.h>
#include <prometheus/gauge.h>

#include "outboxd/metrics/node_metrics.hpp"
#include "outboxd/store/target.hpp"

namespace outboxd::sinks {

class BrokerState {
public:
    BrokerState(metrics::NodeMetrics& metrics, std::string database, std::string target,
                std::string kind);
    BrokerState(const BrokerState&) = delete;
    BrokerState& operator=(const BrokerState&) = delete;

    // The connection came up (why empty) or went down / could not be made (why it did not).
    // Returns whether that changed the state.
    bool set_connected(bool up, const std::string& why);
    [[nodiscard]] bool connected() const { return connected_; }
    // The channel closed (the target changed or left): its gauge says so, nothing is logged.
    void closed();

    void published();  // one more message out, not yet confirmed
    void acked();      // confirmed by the broker
    // Ended without a confirmation: retried (`dead` false) or a dead letter.
    void failed(const std::string& why, bool dead);
    // Out messages answered otherwise (the channel closed): they leave the gauge.
    void forget(std::size_t count);

    [[nodiscard]] const std::optional<std::string>& last_error() const { return last_error_; }
    [[nodiscard]] store::TargetReport take_report();

private:
    void error(const std::string& why);

    std::string database_, target_, kind_;
    prometheus::Counter& acked_;
    prometheus::Counter& failed_;
    prometheus::Counter& dead_;
    prometheus::Gauge& inflight_;
    prometheus::Gauge& connected_gauge_;
    bool connected_ = false;
    std::optional<std::string> last_error_;
    std::optional<std::string> unreported_error_;
    bool unreported_success_ = false;
};

}  // namespace outboxd::sinks
