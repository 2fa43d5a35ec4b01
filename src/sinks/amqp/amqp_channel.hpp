#pragma once

// One AMQP target on one node. Internal to src/sinks/amqp.
//
// The connection lives on the publisher's thread (amqp_publisher.hpp); everything it reports
// is posted to the node's loop, where all of this object's state lives, through a weak handle
// (a report arriving after the channel is gone is dropped). send_task only expands the names,
// builds the message and queues it: the loop never waits on the broker. While not connected
// the channel is not ready (ChannelContext::ready): no rows are claimed for it. A message
// unconfirmed after the target's timeout_ms fails here, whatever the publisher is doing.

#include <chrono>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>

#include <boost/asio/steady_timer.hpp>

#include "amqp_publisher.hpp"
#include "outboxd/sinks/broker_state.hpp"
#include "outboxd/sinks/targets/destination.hpp"

namespace outboxd::sinks::amqp::detail {

class AmqpChannel final : public targets::Channel,
                          public std::enable_shared_from_this<AmqpChannel> {
public:
    AmqpChannel(store::TargetSettings settings, targets::ChannelContext context);
    ~AmqpChannel() override;
    AmqpChannel(const AmqpChannel&) = delete;
    AmqpChannel& operator=(const AmqpChannel&) = delete;

    // Starts connecting (call once, right after construction).
    void start();

    [[nodiscard]] std::optional<std::string> send_task(const sinks::Task& task) override;
    void close(std::string_view reason) override;
    [[nodiscard]] std::size_t in_flight() const override { return pending_.size(); }
    [[nodiscard]] store::TargetReport take_report() override { return state_.take_report(); }
    [[nodiscard]] std::optional<std::string> last_error() const override {
        return state_.last_error();
    }
    [[nodiscard]] bool connected() const override { return state_.connected(); }

private:
    using Clock = std::chrono::steady_clock;

    void on_state(bool up, const std::string& why);
    void on_outcome(const std::string& task_id, std::optional<std::string> error, bool dead);
    // Takes `task_id` out of what is pending; false when it was not (answered already).
    bool settle(const std::string& task_id);
    void arm_timer();
    void expire();
    void fail_all(const std::string& why);

    store::TargetSettings settings_;
    targets::ChannelContext context_;
    bool whole_task_ = false;
    std::string exchange_;  // templates
    std::string routing_key_;
    BrokerState state_;
    // What is out, by task id with its deadline, and the same by deadline (both bounded by
    // the credit dispatch gives).
    std::unordered_map<std::string, Clock::time_point> pending_;
    std::set<std::pair<Clock::time_point, std::string>> deadlines_;
    boost::asio::steady_timer timer_;
    bool timer_armed_ = false;
    std::unique_ptr<AmqpPublisher> publisher_;
    bool closed_ = false;
};

}  // namespace outboxd::sinks::amqp::detail
