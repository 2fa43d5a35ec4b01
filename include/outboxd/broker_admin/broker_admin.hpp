#pragma once

// Setting up and reading the brokers broker targets publish to (README, "Broker targets"):
// JetStream streams (nats.c) and AMQP exchanges and queues (rabbitmq-c). Used by
// `outboxd broker`, the demo, the benchmark and the tests; never by a node. Every call opens
// its own connection, bounded in time, and throws std::runtime_error naming what failed.

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace outboxd::broker_admin {

// A message as a broker stores it.
// One message as a broker stored it.
struct StoredMessage {
    std::string subject;  // the NATS subject, or the AMQP routing key
    std::string data;     // the payload, byte for byte
    // Header name → its first value. AMQP values as text: integers in decimal, booleans as
    // true/false, nested tables and arrays as {k=v,…} and [v,…].
    std::map<std::string, std::string> headers;
    std::string message_id;      // AMQP message-id property; NATS: the Nats-Msg-Id header
    int delivery_mode = 0;       // AMQP: 1 transient, 2 persistent; 0 when unset (and NATS)
    std::uint64_t sequence = 0;  // NATS: the stream sequence; 0 for AMQP
};

// JetStream administration (nats.c). `url`: nats://[user:password@]host:port.

// Connects (and closes): throws when the server cannot be reached or refuses the login.
void nats_ping(const std::string& url);

// Creates (or, when identical, confirms) a stream with file storage on `subjects`, which
// drops a message whose Nats-Msg-Id it stored within `duplicate_window`.
void create_stream(const std::string& url, const std::string& stream,
                   const std::vector<std::string>& subjects,
                   std::chrono::milliseconds duplicate_window = std::chrono::minutes{2});
// How many messages the stream stores now.
[[nodiscard]] std::uint64_t stream_messages(const std::string& url, const std::string& stream);
// Every message the stream stores, in sequence order (deleted sequences skipped).
[[nodiscard]] std::vector<StoredMessage> stream_contents(const std::string& url,
                                                         const std::string& stream);
// Removes every message the stream stores.
void purge_stream(const std::string& url, const std::string& stream);

// The broker's own rate, for the benchmark (bench/broker_scenario.cpp): `count` messages of
// `body`, each with the headers a NATS target sets (Nats-Msg-Id, distinct per message, and 8
// Outboxd-* headers), published to `subject` over one connection with js_PublishMsgAsync, at
// most `window` unacknowledged. Returns the seconds from the first publish to the last
// acknowledgement; throws when a publish fails or the stream refuses a message.
[[nodiscard]] double nats_publish_acked(const std::string& url, const std::string& subject,
                                        std::int64_t count, const std::string& body, int window);

// AMQP administration (rabbitmq-c). `url`: amqp://user:password@host:port/vhost.

// Connects, logs in and opens a channel (and closes): throws when that fails.
void amqp_ping(const std::string& url);

// Declares a durable exchange of `type` ("direct", "topic", "fanout", "headers").
void declare_exchange(const std::string& url, const std::string& name, const std::string& type);
// Declares a durable queue and binds it to `exchange` with `binding_key`.
void declare_queue_bound(const std::string& url, const std::string& queue,
                         const std::string& exchange, const std::string& binding_key);
// Messages ready in the queue (a passive declare); throws when the queue does not exist.
[[nodiscard]] std::uint64_t queue_messages(const std::string& url, const std::string& queue);
// Takes every ready message off the queue (basic.get, auto-ack) until it is empty.
[[nodiscard]] std::vector<StoredMessage> drain_queue(const std::string& url,
                                                     const std::string& queue);
// Removes every ready message from the queue; returns how many it removed.
std::uint64_t purge_queue(const std::string& url, const std::string& queue);

// The broker's own rate, for the benchmark: `count` messages of `body` published as an AMQP
// target publishes them (persistent, mandatory, a distinct message_id, content type
// application/json, 8 Outboxd-* headers) to `exchange` with `routing_key` over one connection
// in confirm mode, at most `window` unconfirmed (acks read with `multiple`). Returns the
// seconds from the first publish to the last confirm; throws on a nack, a returned message or
// a broken connection.
[[nodiscard]] double amqp_publish_confirmed(const std::string& url, const std::string& exchange,
                                            const std::string& routing_key, std::int64_t count,
                                            const std::string& body, int window);

}  // namespace outboxd::broker_admin
