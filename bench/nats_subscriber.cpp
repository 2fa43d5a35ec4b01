#include "nats_subscriber.hpp"

#include <stdexcept>
#include <utility>

#include <nats/nats.h>

namespace outboxd::bench {
namespace {

constexpr std::int64_t kConnectTimeoutMs = 2000;
constexpr std::int64_t kFlushTimeoutMs = 5000;

void check(natsStatus status, const std::string& what) {
    if (status != NATS_OK) {
        throw std::runtime_error{"NATS subscriber: " + what + ": " + natsStatus_GetText(status)};
    }
}

}  // namespace

struct NatsSubscriber::Impl {
    explicit Impl(Arrived on_arrival) : arrived(std::move(on_arrival)) {}
    Impl(const Impl&) = delete;
    Impl& operator=(const Impl&) = delete;
    // The subscription first: no callback runs once it is destroyed.
    ~Impl() {
        if (subscription != nullptr) {
            natsSubscription_Unsubscribe(subscription);
            natsSubscription_Destroy(subscription);
        }
        if (connection != nullptr) natsConnection_Destroy(connection);
        if (options != nullptr) natsOptions_Destroy(options);
    }

    static void on_message(natsConnection* /*connection*/, natsSubscription* /*subscription*/,
                           natsMsg* message, void* closure) {
        const char* key = nullptr;
        if (natsMsgHeader_Get(message, "Nats-Msg-Id", &key) == NATS_OK && key != nullptr) {
            static_cast<Impl*>(closure)->arrived(key);
        }
        natsMsg_Destroy(message);
    }

    Arrived arrived;
    natsOptions* options = nullptr;
    natsConnection* connection = nullptr;
    natsSubscription* subscription = nullptr;
};

NatsSubscriber::NatsSubscriber(const std::string& url, const std::string& subject, Arrived arrived)
    : impl_(std::make_unique<Impl>(std::move(arrived))) {
    check(natsOptions_Create(&impl_->options), "options");
    check(natsOptions_SetURL(impl_->options, url.c_str()), "url");
    check(natsOptions_SetTimeout(impl_->options, kConnectTimeoutMs), "timeout");
    check(natsConnection_Connect(&impl_->connection, impl_->options), "connect to " + url);
    check(natsConnection_Subscribe(&impl_->subscription, impl_->connection, subject.c_str(),
                                   &Impl::on_message, impl_.get()),
          "subscribe to " + subject);
    check(natsConnection_FlushTimeout(impl_->connection, kFlushTimeoutMs), "flush");
}

NatsSubscriber::~NatsSubscriber() = default;

}  // namespace outboxd::bench
