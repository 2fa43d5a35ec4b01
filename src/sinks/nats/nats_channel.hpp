#pragma once

// One NATS JetStream target on one node. Internal to src/sinks/nats.
//
// nats.c runs the connection on threads of its own: it connects in the background (and
// reconnects forever), and calls the PubAck handler on its thread; every such event is posted
// to the node's loop, where all of this object's state lives. While not connected the channel
// is not ready (ChannelContext::ready): no rows are claimed for it.

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include <nats/nats.h>

#include "outboxd/sinks/broker_state.hpp"
#include "outboxd/sinks/targets/destination.hpp"

namespace outboxd::sinks::nats::detail {

class NatsChannel final : public targets::Channel,
                          public std::enable_shared_from_this<NatsChannel> {
public:
    NatsChannel(store::TargetSettings settings, targets::ChannelContext context);
    ~NatsChannel() override;
    NatsChannel(const NatsChannel&) = delete;
    NatsChannel& operator=(const NatsChannel&) = delete;

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

    // Posted from nats.c's threads.
    void on_connection();  // the connector is done: take what it made
    void on_state(bool up, const std::string& why);

    struct Bridge;
    // `result`: the PubAck as the task's result ({"stream","sequence","duplicate"}).
    void on_ack(const std::string& task_id, std::optional<std::string> error, bool permanent,
                std::optional<std::string> result = std::nullopt);

private:
    void fail_all(const std::string& why);
    void release();

    store::TargetSettings settings_;
    targets::ChannelContext context_;
    bool whole_task_ = false;
    std::thread connector_;
    natsConnection* nc_ = nullptr;
    jsCtx* js_ = nullptr;
    std::map<std::string, std::chrono::steady_clock::time_point> pending_;  // by task id
    BrokerState state_;
    bool closed_ = false;
    // What nats.c's callbacks hold (their closure): the loop and a weak handle on this channel.
    Bridge* bridge_ = nullptr;
};

}  // namespace outboxd::sinks::nats::detail
