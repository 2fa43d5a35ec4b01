#pragma once

// One connection to an AMQP broker through rabbitmq-c, owned by one thread (rabbitmq-c is not
// thread-safe per connection): connect, log in, open the publishing channel in confirm mode,
// check exchanges, publish, and read what the broker sends back without waiting. Internal to
// src/sinks/amqp. Expected failures (refused, closed, timed out) are values: the text of why,
// already safe to show; nothing here throws but std::bad_alloc.

#include <chrono>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <sys/socket.h>

#include "amqp_url.hpp"
#include "outboxd/sinks/broker/broker_rules.hpp"
#include "outboxd/sinks/targets/destination.hpp"
#include "outboxd/sinks/task_headers.hpp"

struct amqp_connection_state_t_;

namespace outboxd::sinks::amqp::detail {

// Lets another thread stop the thread that owns a connection within one poll: a flag, an
// eventfd that wakes its polls (also rung when there is work), and the socket to shut down
// so that a blocking rabbitmq-c call returns at once. Thread-safe.
class Stopper {
public:
    Stopper();
    ~Stopper();
    Stopper(const Stopper&) = delete;
    Stopper& operator=(const Stopper&) = delete;

    void stop();
    [[nodiscard]] bool stopping() const;
    void wake();
    // The owner: takes the wakes rung so far, so that the next poll waits again.
    void drain();
    [[nodiscard]] int wake_fd() const { return event_fd_; }
    // The owner: the socket stop() shuts down (-1: none any more). Shut down at once when
    // stop() came first.
    void attach(int socket_fd);

private:
    mutable std::mutex mutex_;
    bool stopping_ = false;
    int socket_fd_ = -1;
    int event_fd_ = -1;
};

struct ConnectSettings {
    AmqpUrl url;
    std::string user;
    std::string password;
    std::optional<std::string> ca_file;
    // Bounds the TCP connect, the TLS and AMQP handshakes, and each RPC.
    std::chrono::milliseconds timeout{10000};
    std::string connection_name;  // what the broker's tools show for the connection
};

// One message to publish.
struct OutMessage {
    std::string task_id;
    std::string exchange;
    std::string routing_key;
    std::string message_id;
    std::string body;
    HeaderList headers;
};

// What a read brought from the broker.
struct BrokerEvent {
    enum class Type { none, ack, nack, returned, blocked, unblocked };
    Type type = Type::none;
    std::uint64_t delivery_tag = 0;  // ack, nack
    bool multiple = false;           // ack, nack: every tag up to delivery_tag
    std::string task_id;             // returned: the message's Outboxd-Task-Id header
    std::string text;                // returned: the broker's reply; blocked: its reason
};

enum class ExchangeCheck { exists, missing, refused, broken };

class AmqpConnection {
public:
    explicit AmqpConnection(Stopper& stopper);
    ~AmqpConnection();
    AmqpConnection(const AmqpConnection&) = delete;
    AmqpConnection& operator=(const AmqpConnection&) = delete;

    // Connects to one of `addresses` (amqp://) or to the URL's host (amqps://, whose TLS
    // socket rabbitmq-c opens itself), logs in and opens the publishing channel in confirm
    // mode. Why not, or nothing.
    [[nodiscard]] std::optional<std::string> open(const ConnectSettings& settings,
                                                  const std::vector<sockaddr_storage>& addresses);

    // Whether `exchange` exists, by a passive declare on a channel of its own (a missing one
    // closes the channel it is asked on). `why`: the broker's words when not `exists`.
    [[nodiscard]] ExchangeCheck check_exchange(const std::string& exchange, std::string& why);

    // Sends one message (mandatory, persistent); its delivery tag is the count of messages
    // published on this connection. Why the connection failed, or nothing.
    [[nodiscard]] std::optional<std::string> publish(const OutMessage& message);

    // The next event the broker sent, without waiting (Type::none: nothing complete yet), or
    // why the connection failed.
    [[nodiscard]] std::optional<std::string> next_event(BrokerEvent& event);
    // Whether rabbitmq-c holds read data not yet taken by next_event.
    [[nodiscard]] bool has_buffered() const;
    [[nodiscard]] int socket_fd() const;

private:
    [[nodiscard]] std::optional<std::string> connect_tcp(
        const std::vector<sockaddr_storage>& addresses, std::uint16_t port,
        std::chrono::milliseconds timeout);
    [[nodiscard]] std::optional<std::string> login(const ConnectSettings& settings);

    Stopper& stopper_;
    amqp_connection_state_t_* conn_ = nullptr;
    bool check_channel_open_ = false;
    // A basic.return read, waiting for its content header (which names the message).
    std::optional<std::string> returning_;
};

}  // namespace outboxd::sinks::amqp::detail
