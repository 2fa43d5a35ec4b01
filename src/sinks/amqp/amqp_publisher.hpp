#pragma once

// The thread that owns an AMQP target's connection on one node. Internal to src/sinks/amqp.
//
// rabbitmq-c blocks and is not thread-safe per connection, so one thread of the publisher's
// own connects (checking the host's addresses first, backing off from 250 ms to 30 s while it
// fails), takes the messages publish() queued, publishes them with many confirms
// outstanding, and reads the broker's acks, nacks and returns between them without blocking
// on the broker. It says what happened through Events, called on its thread (the channel
// posts them to the loop): the connection up or down, and each message's outcome, exactly
// once per message it took, unless stopped first.

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <unordered_map>

#include "amqp_connection.hpp"

namespace outboxd::sinks::amqp::detail {

class AmqpPublisher {
public:
    struct Events {
        // Connected (why empty), or not (why not); blocked by the broker counts as not.
        std::function<void(bool up, std::string why)> state;
        // Confirmed (error empty), or failed: a dead letter when `dead`, else retried.
        std::function<void(std::string task_id, std::optional<std::string> error, bool dead)>
            outcome;
    };

    // `policy` outlives the publisher.
    AmqpPublisher(ConnectSettings settings, const targets::HostPolicy& policy, Events events);
    // stop()
    ~AmqpPublisher();
    AmqpPublisher(const AmqpPublisher&) = delete;
    AmqpPublisher& operator=(const AmqpPublisher&) = delete;

    void start();
    // Any thread; returns at once. The queue is bounded by the channel's credit.
    void publish(OutMessage message);
    // Any thread but its own; returns once the thread has ended (within one poll, or the
    // remainder of a TLS connect). Outcomes not reported by then never are.
    void stop();

private:
    struct Unconfirmed {
        std::string task_id;
        std::string task_header;              // its Outboxd-Task-Id header, which a return names
        std::optional<std::string> returned;  // the broker returned it: a dead letter
    };

    void run();
    // One connection, from connect to failure: why it ended (nothing: stopped). `up` is set
    // once it was logged in.
    std::optional<std::string> serve(bool& up);
    // Publishes one message (its exchange checked first). Why the connection failed.
    std::optional<std::string> send(AmqpConnection& connection, OutMessage message);
    void apply(const BrokerEvent& event);
    void settle(std::uint64_t tag, bool multiple, const std::optional<std::string>& nacked);
    // Fails what the connection held and what waits in the queue, retryable.
    void fail_all(const std::string& why);
    void fail_queued(const std::string& why);
    [[nodiscard]] bool take(OutMessage& message);

    ConnectSettings settings_;
    const targets::HostPolicy& policy_;
    Events events_;
    Stopper stopper_;
    std::thread thread_;

    std::mutex mutex_;
    std::deque<OutMessage> queue_;  // guarded by mutex_

    // The thread's own, for the current connection.
    std::uint64_t published_ = 0;                                   // the last delivery tag
    std::map<std::uint64_t, Unconfirmed> unconfirmed_;              // by delivery tag
    std::unordered_map<std::string, std::uint64_t> tag_of_header_;  // task header → tag
    std::set<std::string> exchanges_;                               // known to exist
};

}  // namespace outboxd::sinks::amqp::detail
