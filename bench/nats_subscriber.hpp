#pragma once

// A NATS core subscriber inside the driver, for the broker latency run: JetStream delivers a
// message it stored to core subscribers of its subject too, so this sees each message the
// moment the server has it. Tells `arrived` each message's Nats-Msg-Id (the row's dispatch
// key), on nats.c's delivery thread. Throws std::runtime_error when it cannot connect or
// subscribe; the destructor unsubscribes and closes.

#include <functional>
#include <memory>
#include <string>
#include <string_view>

namespace outboxd::bench {

class NatsSubscriber {
public:
    using Arrived = std::function<void(std::string_view dispatch_key)>;

    // Returns once the server has the subscription (a flush), so no message is missed.
    NatsSubscriber(const std::string& url, const std::string& subject, Arrived arrived);
    ~NatsSubscriber();
    NatsSubscriber(const NatsSubscriber&) = delete;
    NatsSubscriber& operator=(const NatsSubscriber&) = delete;

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace outboxd::bench
