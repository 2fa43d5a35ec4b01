#include "amqp_channel.hpp"

#include <algorithm>
#include <map>
#include <stdexcept>

#include <unistd.h>

#include <boost/asio/post.hpp>

#include "outboxd/sinks/amqp/amqp_kind.hpp"
#include "outboxd/sinks/task_headers.hpp"
#include "outboxd/util/untrusted_text.hpp"
#include "outboxd/worker/protocol.hpp"

namespace outboxd::sinks::amqp::detail {
namespace {

// RabbitMQ's default max_message_size: a larger body is refused by the broker, every time.
constexpr std::size_t kMaxBodyBytes = std::size_t{128} * 1024 * 1024;
// Connect, handshakes and RPCs are bounded by the target's timeout, within these.
constexpr std::chrono::milliseconds kMinConnectTimeout{1000};
constexpr std::chrono::milliseconds kMaxConnectTimeout{10000};

const std::string* find(const std::map<std::string, std::string>& map, const char* key) {
    const auto it = map.find(key);
    return it == map.end() ? nullptr : &it->second;
}

ConnectSettings connect_settings(const store::TargetSettings& target) {
    ConnectSettings settings;
    auto url = parse_url(target.url);
    if (!url) throw std::runtime_error("url is not an AMQP URL");
    settings.url = std::move(*url);
    // No user: RabbitMQ's default account, as every AMQP client has it.
    const auto* user = find(target.options, "user");
    const auto* password = find(target.credentials, "password");
    settings.user = user ? *user : "guest";
    settings.password = password ? *password : user ? "" : "guest";
    if (target.ca_file) {
        if (::access(target.ca_file->c_str(), R_OK) != 0) {
            throw std::runtime_error("cannot read ca_file " +
                                     util::sanitize_text(*target.ca_file, 200));
        }
        settings.ca_file = target.ca_file;
    }
    settings.timeout = std::clamp(std::chrono::milliseconds{target.timeout_ms}, kMinConnectTimeout,
                                  kMaxConnectTimeout);
    settings.connection_name = "outboxd target " + target.name;
    return settings;
}

}  // namespace

AmqpChannel::AmqpChannel(store::TargetSettings settings, targets::ChannelContext context)
    : settings_(std::move(settings)),
      context_(std::move(context)),
      whole_task_(targets::sends_whole_task(settings_)),
      exchange_(settings_.options.at("exchange")),
      routing_key_(settings_.options.contains("routing_key") ? settings_.options.at("routing_key")
                                                             : std::string{kDefaultRoutingKey}),
      state_(context_.metrics, context_.database, settings_.name, "amqp"),
      timer_(context_.loop) {}

AmqpChannel::~AmqpChannel() {
    if (publisher_) publisher_->stop();
}

void AmqpChannel::start() {
    const auto loop = context_.loop;
    const auto self = weak_from_this();
    // Every report goes to the loop, and finds the channel only while it lives.
    AmqpPublisher::Events events;
    events.state = [loop, self](bool up, std::string why) {
        boost::asio::post(loop, [self, up, why = std::move(why)] {
            if (auto channel = self.lock()) channel->on_state(up, why);
        });
    };
    events.outcome = [loop, self](std::string task_id, std::optional<std::string> error,
                                  bool dead) {
        boost::asio::post(
            loop, [self, task_id = std::move(task_id), error = std::move(error), dead]() mutable {
                if (auto channel = self.lock())
                    channel->on_outcome(task_id, std::move(error), dead);
            });
    };
    publisher_ = std::make_unique<AmqpPublisher>(connect_settings(settings_), context_.policy,
                                                 std::move(events));
    publisher_->start();
}

std::optional<std::string> AmqpChannel::send_task(const sinks::Task& task) {
    if (closed_) return std::string{"the AMQP target was removed"};
    // What can never be published is a dead letter now; the rest is queued.
    auto exchange = expand_template(exchange_, task);
    if (auto why = exchange_problem(exchange)) {
        return "exchange '" + util::sanitize_text(exchange, 300) + "' " + *why;
    }
    auto routing_key = expand_template(routing_key_, task);
    if (auto why = routing_key_problem(routing_key)) {
        return "routing key '" + util::sanitize_text(routing_key, 300) + "' " + *why;
    }
    if (task.dispatch_key.size() > kMaxNameBytes) {
        return "the dispatch key is longer than " + std::to_string(kMaxNameBytes) +
               " bytes, the most an AMQP message-id holds";
    }
    try {
        auto body = whole_task_ ? worker::protocol::encode(task) : task.input_json;
        if (body.size() > kMaxBodyBytes) {
            return "the message body is larger than " + std::to_string(kMaxBodyBytes) +
                   " bytes, the most RabbitMQ takes";
        }
        const auto deadline = Clock::now() + std::chrono::milliseconds{settings_.timeout_ms};
        OutMessage message{task.task_id,      std::move(exchange), std::move(routing_key),
                           task.dispatch_key, std::move(body),     task_headers(task)};
        pending_.emplace(task.task_id, deadline);
        deadlines_.emplace(deadline, task.task_id);
        state_.published();
        publisher_->publish(std::move(message));
        arm_timer();
    } catch (const std::exception& error) {
        // Out of memory, most likely: retried, like any failure of the moment.
        boost::asio::post(context_.loop, [self = weak_from_this(), id = task.task_id,
                                          why = util::sanitize_text(error.what(), 200)] {
            if (auto channel = self.lock())
                channel->on_outcome(id, "cannot publish: " + why, false);
        });
        if (pending_.emplace(task.task_id, Clock::now()).second) state_.published();
    }
    return std::nullopt;
}

void AmqpChannel::on_state(bool up, const std::string& why) {
    if (closed_) return;
    if (state_.set_connected(up, why) && context_.ready) context_.ready(up);
}

bool AmqpChannel::settle(const std::string& task_id) {
    const auto it = pending_.find(task_id);
    if (it == pending_.end()) return false;
    deadlines_.erase({it->second, task_id});
    pending_.erase(it);
    return true;
}

void AmqpChannel::on_outcome(const std::string& task_id, std::optional<std::string> error,
                             bool dead) {
    if (!settle(task_id)) return;  // answered already (timed out, or closed)
    if (error) {
        state_.failed(*error, dead);
        context_.answers.failed(task_id, std::move(*error), !dead, {});
    } else {
        state_.acked();
        context_.answers.done(task_id, std::nullopt);
    }
}

void AmqpChannel::arm_timer() {
    if (timer_armed_ || deadlines_.empty() || closed_) return;
    timer_armed_ = true;
    timer_.expires_at(deadlines_.begin()->first);
    timer_.async_wait([self = weak_from_this()](const boost::system::error_code& error) {
        if (error) return;
        if (auto channel = self.lock()) {
            channel->timer_armed_ = false;
            channel->expire();
        }
    });
}

void AmqpChannel::expire() {
    const auto now = Clock::now();
    // Each answer may close this channel (the engine reaps a retired one): the loop reads
    // the state afresh every time.
    while (!closed_ && !deadlines_.empty() && deadlines_.begin()->first <= now) {
        const auto task_id = deadlines_.begin()->second;
        deadlines_.erase(deadlines_.begin());
        if (!settle(task_id)) continue;
        auto why = "no confirm from the AMQP broker within " +
                   std::to_string(settings_.timeout_ms) + " ms";
        state_.failed(why, false);
        context_.answers.failed(task_id, std::move(why), true, {});
    }
    arm_timer();
}

void AmqpChannel::fail_all(const std::string& why) {
    auto pending = std::exchange(pending_, {});
    deadlines_.clear();
    state_.forget(pending.size());
    for (const auto& [task_id, deadline] : pending) context_.answers.failed(task_id, why, true, {});
}

void AmqpChannel::close(std::string_view reason) {
    if (closed_) return;
    closed_ = true;
    timer_.cancel();
    fail_all("the AMQP target closed: " + std::string{reason});
    if (publisher_) publisher_->stop();
    state_.closed();
}

}  // namespace outboxd::sinks::amqp::detail
