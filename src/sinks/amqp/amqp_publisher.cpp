#include "amqp_publisher.hpp"

#include <array>
#include <random>

#include <poll.h>

#include "outboxd/util/retry_backoff.hpp"
#include "outboxd/util/untrusted_text.hpp"

namespace outboxd::sinks::amqp::detail {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr milliseconds kMinBackoff{250};
constexpr milliseconds kMaxBackoff{30000};
// Messages published between two reads of the broker's answers, so that confirms and returns
// are taken while a long queue goes out.
constexpr int kPublishBurst = 64;
// The longest a poll sleeps with nothing to do. The reads between polls send the heartbeats.
constexpr milliseconds kPollInterval{20};
// Exchanges remembered as existing on one connection; past that the memory starts again.
constexpr std::size_t kMaxKnownExchanges = 1024;

}  // namespace

AmqpPublisher::AmqpPublisher(ConnectSettings settings, const targets::HostPolicy& policy,
                             Events events)
    : settings_(std::move(settings)), policy_(policy), events_(std::move(events)) {}

AmqpPublisher::~AmqpPublisher() { stop(); }

void AmqpPublisher::start() {
    thread_ = std::thread([this] { run(); });
}

void AmqpPublisher::publish(OutMessage message) {
    {
        std::lock_guard lock{mutex_};
        queue_.push_back(std::move(message));
    }
    stopper_.wake();
}

void AmqpPublisher::stop() {
    stopper_.stop();
    if (thread_.joinable()) thread_.join();
}

bool AmqpPublisher::take(OutMessage& message) {
    std::lock_guard lock{mutex_};
    if (queue_.empty()) return false;
    message = std::move(queue_.front());
    queue_.pop_front();
    return true;
}

void AmqpPublisher::run() {
    util::RetryBackoff backoff{kMinBackoff, kMaxBackoff, std::random_device{}()};
    while (!stopper_.stopping()) {
        try {
            bool up = false;
            std::optional<std::string> why;
            try {
                why = serve(up);
            } catch (const std::exception& error) {
                why = "internal error: " + util::sanitize_text(error.what(), 200);
            }
            if (stopper_.stopping()) return;
            const auto reason = why.value_or("the connection ended");
            fail_all(reason);
            events_.state(false, reason);
            if (up) backoff.reset();
            // Until the next try, what is queued cannot go: it fails at once (the channel is
            // not ready meanwhile, so little comes).
            const auto until = Clock::now() + backoff.next();
            while (!stopper_.stopping()) {
                const auto left = std::chrono::duration_cast<milliseconds>(until - Clock::now());
                if (left.count() <= 0) break;
                pollfd wake{stopper_.wake_fd(), POLLIN, 0};
                ::poll(&wake, 1, static_cast<int>(left.count()));
                stopper_.drain();
                fail_queued("not connected to the AMQP broker: " + reason);
            }
        } catch (const std::exception&) {
            // Out of memory while answering: the channel's timeouts answer what was lost.
            pollfd wake{stopper_.wake_fd(), POLLIN, 0};
            ::poll(&wake, 1, static_cast<int>(kMaxBackoff.count()));
        }
    }
}

std::optional<std::string> AmqpPublisher::serve(bool& up) {
    published_ = 0;
    exchanges_.clear();
    const auto checked = broker::checked_addresses(
        {settings_.url.host, settings_.url.port, settings_.url.tls}, policy_);
    if (checked.problem) return "url " + *checked.problem;
    AmqpConnection connection{stopper_};
    if (auto why = connection.open(settings_, checked.addresses)) {
        if (stopper_.stopping()) return std::nullopt;
        return why;
    }
    up = true;
    events_.state(true, "");
    while (!stopper_.stopping()) {
        bool busy = false;
        OutMessage message;
        for (int i = 0; i < kPublishBurst && take(message); ++i) {
            busy = true;
            if (auto why = send(connection, std::move(message))) return why;
        }
        BrokerEvent event;
        while (true) {
            if (auto why = connection.next_event(event)) return why;
            if (event.type == BrokerEvent::Type::none) break;
            apply(event);
        }
        if (busy || connection.has_buffered()) continue;
        std::array<pollfd, 2> polls{pollfd{stopper_.wake_fd(), POLLIN, 0},
                                    pollfd{connection.socket_fd(), POLLIN, 0}};
        ::poll(polls.data(), polls.size(), static_cast<int>(kPollInterval.count()));
        stopper_.drain();
    }
    return std::nullopt;
}

std::optional<std::string> AmqpPublisher::send(AmqpConnection& connection, OutMessage message) {
    if (!exchanges_.contains(message.exchange)) {
        std::string why;
        switch (connection.check_exchange(message.exchange, why)) {
            case ExchangeCheck::exists:
                if (exchanges_.size() >= kMaxKnownExchanges) exchanges_.clear();
                exchanges_.insert(message.exchange);
                break;
            case ExchangeCheck::missing:
                events_.outcome(std::move(message.task_id),
                                "no exchange '" + message.exchange + "' in vhost '" +
                                    util::sanitize_text(settings_.url.vhost, 255) + "'",
                                true);
                return std::nullopt;
            case ExchangeCheck::refused:
                events_.outcome(std::move(message.task_id),
                                "exchange '" + message.exchange + "': " + why, false);
                return std::nullopt;
            case ExchangeCheck::broken:
                events_.outcome(std::move(message.task_id), why, false);
                return why;
        }
    }
    if (auto why = connection.publish(message)) {
        events_.outcome(std::move(message.task_id), *why, false);
        return why;
    }
    const auto tag = ++published_;
    auto header = header_safe(message.task_id);
    tag_of_header_[header] = tag;
    unconfirmed_.emplace(tag, Unconfirmed{std::move(message.task_id), std::move(header), {}});
    return std::nullopt;
}

void AmqpPublisher::apply(const BrokerEvent& event) {
    switch (event.type) {
        case BrokerEvent::Type::ack:
            settle(event.delivery_tag, event.multiple, std::nullopt);
            break;
        case BrokerEvent::Type::nack:
            settle(event.delivery_tag, event.multiple,
                   "the broker did not take the message (basic.nack)");
            break;
        case BrokerEvent::Type::returned:
            // A return comes before the ack of the same message: the ack then ends it as a
            // dead letter.
            if (const auto it = tag_of_header_.find(event.task_id); it != tag_of_header_.end()) {
                unconfirmed_.at(it->second).returned =
                    "the broker returned the message: " + event.text;
            }
            break;
        case BrokerEvent::Type::blocked:
            events_.state(false, "the broker blocked publishing: " + event.text);
            break;
        case BrokerEvent::Type::unblocked:
            events_.state(true, "");
            break;
        case BrokerEvent::Type::none:
            break;
    }
}

void AmqpPublisher::settle(std::uint64_t tag, bool multiple,
                           const std::optional<std::string>& nacked) {
    auto it = multiple ? unconfirmed_.begin() : unconfirmed_.find(tag);
    const auto end = multiple                   ? unconfirmed_.upper_bound(tag)
                     : it == unconfirmed_.end() ? it
                                                : std::next(it);
    while (it != end) {
        auto& message = it->second;
        tag_of_header_.erase(message.task_header);
        if (message.returned) {
            events_.outcome(std::move(message.task_id), std::move(message.returned), true);
        } else {
            events_.outcome(std::move(message.task_id), nacked, false);
        }
        it = unconfirmed_.erase(it);
    }
}

void AmqpPublisher::fail_all(const std::string& why) {
    auto unconfirmed = std::exchange(unconfirmed_, {});
    tag_of_header_.clear();
    for (auto& [tag, message] : unconfirmed)
        events_.outcome(std::move(message.task_id), why, false);
    fail_queued(why);
}

void AmqpPublisher::fail_queued(const std::string& why) {
    std::deque<OutMessage> queued;
    {
        std::lock_guard lock{mutex_};
        queued.swap(queue_);
    }
    for (auto& message : queued) events_.outcome(std::move(message.task_id), why, false);
}

}  // namespace outboxd::sinks::amqp::detail
