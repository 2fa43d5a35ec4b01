// The brokers of tests/support/brokers.hpp: a nats-server with JetStream and a RabbitMQ node
// of the test's own start on free ports, take messages published with their C clients
// (nats.c, rabbitmq-c), report them through the admin helpers, and keep them across a
// restart (JetStream file storage, even after a SIGKILL; a durable queue's persistent
// messages).

#include <map>
#include <memory>
#include <set>
#include <stdexcept>
#include <string>

#include <amqp.h>
#include <amqp_tcp_socket.h>
#include <catch2/catch.hpp>
#include <nats/nats.h>

#include "brokers.hpp"

using namespace outboxd;
using test::StoredMessage;

namespace {

constexpr std::uint16_t kEphemeralPorts = 32768;

// ---- NATS: a JetStream publisher (nats.c) ----

class JsPublisher {
public:
    explicit JsPublisher(const std::string& url) {
        REQUIRE(natsConnection_ConnectTo(&connection_, url.c_str()) == NATS_OK);
        REQUIRE(natsConnection_JetStream(&js_, connection_, nullptr) == NATS_OK);
    }
    ~JsPublisher() {
        jsCtx_Destroy(js_);
        natsConnection_Destroy(connection_);
    }
    JsPublisher(const JsPublisher&) = delete;
    JsPublisher& operator=(const JsPublisher&) = delete;

    // Publishes and waits for the stream's acknowledgement; whether the stream took it as a
    // duplicate (same Nats-Msg-Id within the window).
    bool publish(const std::string& subject, const std::string& data,
                 const std::map<std::string, std::string>& headers) {
        natsMsg* message = nullptr;
        REQUIRE(natsMsg_Create(&message, subject.c_str(), nullptr, data.data(),
                               static_cast<int>(data.size())) == NATS_OK);
        for (const auto& [name, value] : headers) {
            REQUIRE(natsMsgHeader_Set(message, name.c_str(), value.c_str()) == NATS_OK);
        }
        jsPubAck* ack = nullptr;
        jsErrCode js_error{};
        const natsStatus status = js_PublishMsg(&ack, js_, message, nullptr, &js_error);
        natsMsg_Destroy(message);
        INFO(natsStatus_GetText(status) << " [JetStream error " << js_error << "]");
        REQUIRE(status == NATS_OK);
        const bool duplicate = ack->Duplicate;
        jsPubAck_Destroy(ack);
        return duplicate;
    }

private:
    natsConnection* connection_ = nullptr;
    jsCtx* js_ = nullptr;
};

// ---- AMQP: a publisher with confirms (rabbitmq-c) ----

amqp_bytes_t bytes(const std::string& text) {
    return {text.size(), const_cast<char*>(text.data())};
}

class AmqpPublisher {
public:
    explicit AmqpPublisher(std::uint16_t port) : connection_(amqp_new_connection()) {
        amqp_socket_t* socket = amqp_tcp_socket_new(connection_);
        REQUIRE(socket != nullptr);
        REQUIRE(amqp_socket_open(socket, "127.0.0.1", port) == AMQP_STATUS_OK);
        REQUIRE(amqp_login(connection_, "/", 0, 131072, 0, AMQP_SASL_METHOD_PLAIN, "guest", "guest")
                    .reply_type == AMQP_RESPONSE_NORMAL);
        amqp_channel_open(connection_, 1);
        REQUIRE(amqp_get_rpc_reply(connection_).reply_type == AMQP_RESPONSE_NORMAL);
        // Confirms: the broker acknowledges a persistent message once it is on disk.
        amqp_confirm_select(connection_, 1);
        REQUIRE(amqp_get_rpc_reply(connection_).reply_type == AMQP_RESPONSE_NORMAL);
    }
    ~AmqpPublisher() {
        amqp_channel_close(connection_, 1, AMQP_REPLY_SUCCESS);
        amqp_connection_close(connection_, AMQP_REPLY_SUCCESS);
        amqp_destroy_connection(connection_);
    }
    AmqpPublisher(const AmqpPublisher&) = delete;
    AmqpPublisher& operator=(const AmqpPublisher&) = delete;

    // A persistent message (delivery mode 2) with a message id and headers (one string,
    // one integer).
    void publish(const std::string& exchange, const std::string& routing_key,
                 const std::string& body, const std::string& message_id, const std::string& task,
                 int attempt) {
        amqp_table_entry_t entries[2];
        entries[0].key = amqp_cstring_bytes("outboxd-task");
        entries[0].value.kind = AMQP_FIELD_KIND_UTF8;
        entries[0].value.value.bytes = bytes(task);
        entries[1].key = amqp_cstring_bytes("attempt");
        entries[1].value.kind = AMQP_FIELD_KIND_I32;
        entries[1].value.value.i32 = attempt;
        amqp_basic_properties_t properties{};
        properties._flags =
            AMQP_BASIC_DELIVERY_MODE_FLAG | AMQP_BASIC_MESSAGE_ID_FLAG | AMQP_BASIC_HEADERS_FLAG;
        properties.delivery_mode = 2;
        properties.message_id = bytes(message_id);
        properties.headers = {2, entries};
        REQUIRE(amqp_basic_publish(connection_, 1, bytes(exchange), bytes(routing_key), 0, 0,
                                   &properties, bytes(body)) == AMQP_STATUS_OK);
        unconfirmed_.insert(++published_);
    }

    // Waits until the broker confirmed everything published so far. Confirms may come out
    // of order (an unroutable message's at once, a persistent one's once it is on disk).
    void await_confirms() {
        while (!unconfirmed_.empty()) {
            amqp_frame_t frame;
            timeval timeout{10, 0};
            REQUIRE(amqp_simple_wait_frame_noblock(connection_, &frame, &timeout) ==
                    AMQP_STATUS_OK);
            if (frame.frame_type != AMQP_FRAME_METHOD) continue;
            REQUIRE(frame.payload.method.id == AMQP_BASIC_ACK_METHOD);
            const auto* ack = static_cast<amqp_basic_ack_t*>(frame.payload.method.decoded);
            if (ack->multiple) {
                unconfirmed_.erase(unconfirmed_.begin(),
                                   unconfirmed_.upper_bound(ack->delivery_tag));
            } else {
                unconfirmed_.erase(ack->delivery_tag);
            }
        }
    }

private:
    amqp_connection_state_t connection_;
    std::uint64_t published_ = 0;
    std::set<std::uint64_t> unconfirmed_;  // delivery tags
};

}  // namespace

TEST_CASE("nats-server: a JetStream stream keeps its messages across a crash", "[e2e][brokers]") {
    test::NatsServer nats{test::scratch_dir("brokers-nats")};
    CHECK(nats.port() < kEphemeralPorts);
    CHECK(nats.monitor_port() < kEphemeralPorts);
    CHECK(nats.url() == "nats://127.0.0.1:" + std::to_string(nats.port()));

    test::create_stream(nats.client_url(), "ORDERS", {"orders.>"});
    {
        JsPublisher publisher{nats.client_url()};
        for (int i = 1; i <= 3; ++i) {
            CHECK_FALSE(publisher.publish("orders." + std::to_string(i),
                                          "payload " + std::to_string(i),
                                          {{"Nats-Msg-Id", "m-" + std::to_string(i)},
                                           {"Outboxd-Task", std::to_string(100 + i)}}));
        }
        // Within the duplicate window, the same Nats-Msg-Id is dropped.
        CHECK(publisher.publish("orders.1", "again", {{"Nats-Msg-Id", "m-1"}}));
    }
    const auto check_contents = [&] {
        REQUIRE(test::stream_messages(nats.client_url(), "ORDERS") == 3);
        const auto contents = test::stream_contents(nats.client_url(), "ORDERS");
        REQUIRE(contents.size() == 3);
        for (std::size_t i = 0; i < contents.size(); ++i) {
            const auto n = std::to_string(i + 1);
            CHECK(contents[i].sequence == i + 1);
            CHECK(contents[i].subject == "orders." + n);
            CHECK(contents[i].data == "payload " + n);
            CHECK(contents[i].message_id == "m-" + n);
            CHECK(contents[i].headers.at("Outboxd-Task") == std::to_string(101 + i));
        }
    };
    check_contents();

    nats.kill();
    CHECK_FALSE(nats.running());
    CHECK_THROWS_AS(test::stream_messages(nats.client_url(), "ORDERS"), std::runtime_error);
    nats.restart();
    CHECK(nats.running());
    check_contents();
    CHECK_THROWS_AS(test::stream_messages(nats.client_url(), "MISSING"), std::runtime_error);
}

TEST_CASE("nats-server: a token is required when set", "[e2e][brokers]") {
    test::NatsAuth auth;
    auth.token = "s3cret";
    test::NatsServer nats{test::scratch_dir("brokers-nats-token"), auth};
    CHECK(nats.client_url() == "nats://s3cret@127.0.0.1:" + std::to_string(nats.port()));
    CHECK_THROWS_AS(test::create_stream(nats.url(), "EVENTS", {"events.>"}), std::runtime_error);
    test::create_stream(nats.client_url(), "EVENTS", {"events.>"});
    CHECK(test::stream_messages(nats.client_url(), "EVENTS") == 0);
}

TEST_CASE("rabbitmq-server: a durable queue keeps its persistent messages across restarts",
          "[e2e][brokers]") {
    test::RabbitMq rabbit{test::scratch_dir("brokers-rabbit")};
    CHECK(rabbit.port() < kEphemeralPorts);
    CHECK(rabbit.url() == "amqp://guest:guest@127.0.0.1:" + std::to_string(rabbit.port()) + "/%2f");

    test::declare_exchange(rabbit.url(), "outboxd.events", "topic");
    test::declare_queue_bound(rabbit.url(), "orders", "outboxd.events", "orders.#");
    {
        AmqpPublisher publisher{rabbit.port()};
        for (int i = 1; i <= 3; ++i) {
            const auto n = std::to_string(i);
            publisher.publish("outboxd.events", "orders.created." + n, "body " + n, "m-" + n,
                              "task-" + n, i);
        }
        publisher.publish("outboxd.events", "payments.created", "unrouted", "m-x", "task-x", 1);
        publisher.await_confirms();
    }
    CHECK(test::queue_messages(rabbit.url(), "orders") == 3);

    // A clean stop and start: the queue and its messages are back.
    rabbit.stop();
    CHECK_FALSE(rabbit.running());
    CHECK_THROWS_AS(test::queue_messages(rabbit.url(), "orders"), std::runtime_error);
    rabbit.restart();
    REQUIRE(test::queue_messages(rabbit.url(), "orders") == 3);
    const auto drained = test::drain_queue(rabbit.url(), "orders");
    REQUIRE(drained.size() == 3);
    for (std::size_t i = 0; i < drained.size(); ++i) {
        const auto n = std::to_string(i + 1);
        CHECK(drained[i].subject == "orders.created." + n);
        CHECK(drained[i].data == "body " + n);
        CHECK(drained[i].message_id == "m-" + n);
        CHECK(drained[i].delivery_mode == 2);
        CHECK(drained[i].headers ==
              std::map<std::string, std::string>{{"attempt", n}, {"outboxd-task", "task-" + n}});
    }
    CHECK(test::queue_messages(rabbit.url(), "orders") == 0);

    // A crash: what the broker confirmed survives it.
    {
        AmqpPublisher publisher{rabbit.port()};
        publisher.publish("outboxd.events", "orders.paid", "after", "m-4", "task-4", 1);
        publisher.await_confirms();
    }
    rabbit.kill();
    rabbit.restart();
    CHECK(test::queue_messages(rabbit.url(), "orders") == 1);
    CHECK_THROWS_AS(test::queue_messages(rabbit.url(), "missing"), std::runtime_error);
}
