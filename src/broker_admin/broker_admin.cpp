#include "outboxd/broker_admin/broker_admin.hpp"

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <stdexcept>
#include <utility>

#include <amqp.h>
#include <amqp_tcp_socket.h>
#include <nats/nats.h>
#include <nlohmann/json.hpp>

namespace outboxd::broker_admin {
namespace {

// Client-side bounds, so that a wedged broker fails a call instead of hanging it.
constexpr std::int64_t kNatsConnectTimeoutMs = 2000;
constexpr std::int64_t kNatsApiTimeoutMs = 5000;
constexpr long kAmqpTimeoutSeconds = 10;
constexpr int kAmqpFrameMax = 131072;
constexpr amqp_channel_t kAmqpChannel = 1;

// ---- nats.c ----

struct NatsDeleter {
    void operator()(natsOptions* p) const { natsOptions_Destroy(p); }
    void operator()(natsConnection* p) const { natsConnection_Destroy(p); }
    void operator()(jsCtx* p) const { jsCtx_Destroy(p); }
    void operator()(jsStreamInfo* p) const { jsStreamInfo_Destroy(p); }
    void operator()(natsMsg* p) const { natsMsg_Destroy(p); }
};
template <class T>
using NatsPtr = std::unique_ptr<T, NatsDeleter>;

void check_nats(natsStatus status, const std::string& what, jsErrCode js_error = jsErrCode{}) {
    if (status == NATS_OK) return;
    std::string text = what + ": " + natsStatus_GetText(status);
    if (const char* detail = nats_GetLastError(nullptr); detail && *detail) {
        text += std::string{" ("} + detail + ")";
    }
    if (js_error != 0) text += " [JetStream error " + std::to_string(js_error) + "]";
    throw std::runtime_error(text);
}

NatsPtr<natsConnection> connect_nats(const std::string& url, const std::string& what) {
    natsOptions* raw_options = nullptr;
    check_nats(natsOptions_Create(&raw_options), what + ": options");
    const NatsPtr<natsOptions> options{raw_options};
    check_nats(natsOptions_SetURL(options.get(), url.c_str()), what + ": url");
    check_nats(natsOptions_SetTimeout(options.get(), kNatsConnectTimeoutMs), what + ": timeout");
    check_nats(natsOptions_SetAllowReconnect(options.get(), false), what + ": reconnect");
    natsConnection* connection = nullptr;
    check_nats(natsConnection_Connect(&connection, options.get()), what + ": connect");
    return NatsPtr<natsConnection>{connection};
}

// A connection and its JetStream context, for one helper call.
class JetStream {
public:
    JetStream(const std::string& url, const std::string& what)
        : connection_(connect_nats(url, what)) {
        jsOptions options;
        jsOptions_Init(&options);
        options.Wait = kNatsApiTimeoutMs;
        jsCtx* js = nullptr;
        check_nats(natsConnection_JetStream(&js, connection_.get(), &options),
                   what + ": JetStream context");
        js_.reset(js);
    }
    [[nodiscard]] jsCtx* get() const { return js_.get(); }

private:
    NatsPtr<natsConnection> connection_;
    NatsPtr<jsCtx> js_;  // destroyed first
};

NatsPtr<jsStreamInfo> stream_info(const JetStream& js, const std::string& stream,
                                  const std::string& what) {
    jsStreamInfo* info = nullptr;
    jsErrCode js_error{};
    check_nats(js_GetStreamInfo(&info, js.get(), stream.c_str(), nullptr, &js_error),
               what + ": stream info of " + stream, js_error);
    return NatsPtr<jsStreamInfo>{info};
}

StoredMessage stored_nats_message(natsMsg* message) {
    StoredMessage stored;
    stored.subject = natsMsg_GetSubject(message);
    if (const char* data = natsMsg_GetData(message)) {
        stored.data.assign(data, static_cast<std::size_t>(natsMsg_GetDataLength(message)));
    }
    stored.sequence = natsMsg_GetSequence(message);
    const char** keys = nullptr;
    int count = 0;
    if (natsMsgHeader_Keys(message, &keys, &count) == NATS_OK) {
        for (int i = 0; i < count; ++i) {
            const char* value = nullptr;
            if (natsMsgHeader_Get(message, keys[i], &value) == NATS_OK && value) {
                stored.headers[keys[i]] = value;
            }
        }
        std::free(static_cast<void*>(keys));
    }
    if (const auto id = stored.headers.find("Nats-Msg-Id"); id != stored.headers.end()) {
        stored.message_id = id->second;
    }
    return stored;
}

// The headers of the benchmark's limit runs: those of a target's message (task_headers.hpp),
// with values of the same length as the benchmark's rows give them.
std::vector<std::pair<std::string, std::string>> limit_headers(std::int64_t i) {
    const auto n = std::to_string(i);
    return {{"Outboxd-Dispatch-Key", "limit-" + n},
            {"Outboxd-Attempt", "1"},
            {"Outboxd-Delivery", "1"},
            {"Outboxd-Namespace", "default"},
            {"Outboxd-Workflow-Id", "limit-wf-" + n},
            {"Outboxd-Activity-Type", "noop"},
            {"Outboxd-Database", "bench_limit"},
            {"Outboxd-Task-Id", n}};
}

double seconds_since(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// What nats_publish_acked's acknowledgement handler counts (on nats.c's thread).
struct AckTally {
    std::atomic<std::int64_t> acked{0};
    std::atomic<std::int64_t> failed{0};
    std::atomic<int> first_error{0};  // a jsErrCode, or a natsStatus negated
};

void count_ack(jsCtx* /*js*/, natsMsg* message, jsPubAck* ack, jsPubAckErr* error, void* closure) {
    auto* tally = static_cast<AckTally*>(closure);
    if (ack != nullptr && error == nullptr) {
        tally->acked.fetch_add(1, std::memory_order_relaxed);
    } else {
        tally->failed.fetch_add(1, std::memory_order_relaxed);
        int code = 0;
        if (error != nullptr) code = error->ErrCode != 0 ? error->ErrCode : -error->Err;
        int none = 0;
        tally->first_error.compare_exchange_strong(none, code);
    }
    natsMsg_Destroy(message);
}

// ---- rabbitmq-c ----

std::string bytes_text(amqp_bytes_t bytes) {
    if (bytes.bytes == nullptr) return {};
    return {static_cast<const char*>(bytes.bytes), bytes.len};
}

std::string field_text(const amqp_field_value_t& field);

std::string table_text(const amqp_table_t& table) {
    std::string text = "{";
    for (int i = 0; i < table.num_entries; ++i) {
        if (i > 0) text += ",";
        text += bytes_text(table.entries[i].key) + "=" + field_text(table.entries[i].value);
    }
    return text + "}";
}

std::string field_text(const amqp_field_value_t& field) {
    switch (field.kind) {
        case AMQP_FIELD_KIND_BOOLEAN:
            return field.value.boolean ? "true" : "false";
        case AMQP_FIELD_KIND_I8:
            return std::to_string(field.value.i8);
        case AMQP_FIELD_KIND_U8:
            return std::to_string(field.value.u8);
        case AMQP_FIELD_KIND_I16:
            return std::to_string(field.value.i16);
        case AMQP_FIELD_KIND_U16:
            return std::to_string(field.value.u16);
        case AMQP_FIELD_KIND_I32:
            return std::to_string(field.value.i32);
        case AMQP_FIELD_KIND_U32:
            return std::to_string(field.value.u32);
        case AMQP_FIELD_KIND_I64:
            return std::to_string(field.value.i64);
        case AMQP_FIELD_KIND_U64:
        case AMQP_FIELD_KIND_TIMESTAMP:
            return std::to_string(field.value.u64);
        case AMQP_FIELD_KIND_F32:
            return std::to_string(field.value.f32);
        case AMQP_FIELD_KIND_F64:
            return std::to_string(field.value.f64);
        case AMQP_FIELD_KIND_UTF8:
        case AMQP_FIELD_KIND_BYTES:
            return bytes_text(field.value.bytes);
        case AMQP_FIELD_KIND_TABLE:
            return table_text(field.value.table);
        case AMQP_FIELD_KIND_ARRAY: {
            std::string text = "[";
            for (int i = 0; i < field.value.array.num_entries; ++i) {
                if (i > 0) text += ",";
                text += field_text(field.value.array.entries[i]);
            }
            return text + "]";
        }
        case AMQP_FIELD_KIND_DECIMAL:
            return std::to_string(field.value.decimal.value) + "e-" +
                   std::to_string(field.value.decimal.decimals);
        default:
            return {};
    }
}

std::string reply_text(const amqp_rpc_reply_t& reply) {
    switch (reply.reply_type) {
        case AMQP_RESPONSE_NORMAL:
            return "ok";
        case AMQP_RESPONSE_NONE:
            return "no reply";
        case AMQP_RESPONSE_LIBRARY_EXCEPTION:
            return amqp_error_string2(reply.library_error);
        case AMQP_RESPONSE_SERVER_EXCEPTION:
            if (reply.reply.id == AMQP_CONNECTION_CLOSE_METHOD) {
                const auto* close = static_cast<amqp_connection_close_t*>(reply.reply.decoded);
                return "connection closed by the server: " + std::to_string(close->reply_code) +
                       " " + bytes_text(close->reply_text);
            }
            if (reply.reply.id == AMQP_CHANNEL_CLOSE_METHOD) {
                const auto* close = static_cast<amqp_channel_close_t*>(reply.reply.decoded);
                return "channel closed by the server: " + std::to_string(close->reply_code) + " " +
                       bytes_text(close->reply_text);
            }
            return "server exception, method " + std::to_string(reply.reply.id);
    }
    return "unknown reply";
}

// One AMQP connection with channel 1 open, for one helper call. Not thread-safe.
class AmqpSession {
public:
    AmqpSession(const std::string& url, std::string what) : what_(std::move(what)) {
        std::vector<char> url_buffer(url.begin(), url.end());
        url_buffer.push_back('\0');
        amqp_connection_info info{};
        amqp_default_connection_info(&info);
        if (amqp_parse_url(url_buffer.data(), &info) != AMQP_STATUS_OK) {
            throw std::runtime_error(what_ + ": bad AMQP URL " + url);
        }
        if (info.ssl) throw std::runtime_error(what_ + ": amqps:// is not supported");
        connection_.reset(amqp_new_connection());
        if (!connection_) throw std::runtime_error(what_ + ": out of memory");
        timeval timeout{kAmqpTimeoutSeconds, 0};
        amqp_set_handshake_timeout(get(), &timeout);
        amqp_set_rpc_timeout(get(), &timeout);
        amqp_socket_t* socket = amqp_tcp_socket_new(get());
        if (socket == nullptr) fail("TCP socket", "cannot create it");
        if (const int status = amqp_socket_open_noblock(socket, info.host, info.port, &timeout);
            status != AMQP_STATUS_OK) {
            fail("connect to " + std::string{info.host} + ":" + std::to_string(info.port),
                 amqp_error_string2(status));
        }
        check(amqp_login(get(), info.vhost, 0, kAmqpFrameMax, 0, AMQP_SASL_METHOD_PLAIN, info.user,
                         info.password),
              "login");
        logged_in_ = true;
        amqp_channel_open(get(), kAmqpChannel);
        check(amqp_get_rpc_reply(get()), "channel.open");
        channel_open_ = true;
    }

    ~AmqpSession() {
        // A clean close, unless the connection already broke (a close would wait for
        // nothing until its timeout).
        if (logged_in_) {
            if (channel_open_) amqp_channel_close(get(), kAmqpChannel, AMQP_REPLY_SUCCESS);
            amqp_connection_close(get(), AMQP_REPLY_SUCCESS);
        }
    }
    AmqpSession(const AmqpSession&) = delete;
    AmqpSession& operator=(const AmqpSession&) = delete;

    [[nodiscard]] amqp_connection_state_t get() const { return connection_.get(); }

    // Throws, naming `step`, unless `reply` is a normal one.
    void check(const amqp_rpc_reply_t& reply, const std::string& step) {
        if (reply.reply_type == AMQP_RESPONSE_NORMAL) return;
        const std::string text = reply_text(reply);
        if (reply.reply_type == AMQP_RESPONSE_SERVER_EXCEPTION &&
            reply.reply.id == AMQP_CHANNEL_CLOSE_METHOD) {
            // The server closed the channel: acknowledge it, so that the connection still
            // closes cleanly.
            amqp_channel_close_ok_t close_ok{};
            amqp_send_method(get(), kAmqpChannel, AMQP_CHANNEL_CLOSE_OK_METHOD, &close_ok);
            channel_open_ = false;
        } else {
            logged_in_ = false;
        }
        fail(step, text);
    }

    [[noreturn]] void fail(const std::string& step, const std::string& text) const {
        throw std::runtime_error(what_ + ": " + step + ": " + text);
    }

private:
    struct Destroy {
        void operator()(amqp_connection_state_t connection) const {
            amqp_destroy_connection(connection);
        }
    };

    std::string what_;
    // Freed even when the constructor throws (the socket with it).
    std::unique_ptr<amqp_connection_state_t_, Destroy> connection_;
    bool logged_in_ = false;
    bool channel_open_ = false;
};

}  // namespace

void nats_ping(const std::string& url) { (void)connect_nats(url, "ping " + url); }

void amqp_ping(const std::string& url) { AmqpSession session{url, "ping"}; }

// ---- JetStream administration ----

void create_stream(const std::string& url, const std::string& stream,
                   const std::vector<std::string>& subjects,
                   std::chrono::milliseconds duplicate_window) {
    const std::string what = "create_stream " + stream;
    const JetStream js{url, what};
    std::vector<const char*> subject_pointers;
    subject_pointers.reserve(subjects.size());
    for (const auto& subject : subjects) subject_pointers.push_back(subject.c_str());
    jsStreamConfig config;
    jsStreamConfig_Init(&config);
    config.Name = stream.c_str();
    config.Subjects = subject_pointers.data();
    config.SubjectsLen = static_cast<int>(subject_pointers.size());
    config.Storage = js_FileStorage;
    config.Duplicates =
        std::chrono::duration_cast<std::chrono::nanoseconds>(duplicate_window).count();
    jsStreamInfo* info = nullptr;
    jsErrCode js_error{};
    check_nats(js_AddStream(&info, js.get(), &config, nullptr, &js_error), what, js_error);
    jsStreamInfo_Destroy(info);
}

std::uint64_t stream_messages(const std::string& url, const std::string& stream) {
    const std::string what = "stream_messages " + stream;
    const JetStream js{url, what};
    return stream_info(js, stream, what)->State.Msgs;
}

std::vector<StoredMessage> stream_contents(const std::string& url, const std::string& stream) {
    const std::string what = "stream_contents " + stream;
    const JetStream js{url, what};
    const auto info = stream_info(js, stream, what);
    std::vector<StoredMessage> messages;
    if (info->State.Msgs == 0) return messages;
    for (auto sequence = info->State.FirstSeq; sequence <= info->State.LastSeq; ++sequence) {
        natsMsg* raw = nullptr;
        jsErrCode js_error{};
        const natsStatus status =
            js_GetMsg(&raw, js.get(), stream.c_str(), sequence, nullptr, &js_error);
        const NatsPtr<natsMsg> message{raw};
        if (status == NATS_NOT_FOUND) continue;  // deleted
        check_nats(status, what + ": message " + std::to_string(sequence), js_error);
        messages.push_back(stored_nats_message(message.get()));
    }
    return messages;
}

void purge_stream(const std::string& url, const std::string& stream) {
    const std::string what = "purge_stream " + stream;
    const JetStream js{url, what};
    jsErrCode js_error{};
    check_nats(js_PurgeStream(js.get(), stream.c_str(), nullptr, &js_error), what, js_error);
}

double nats_publish_acked(const std::string& url, const std::string& subject, std::int64_t count,
                          const std::string& body, int window) {
    const std::string what = "nats_publish_acked " + subject;
    const auto connection = connect_nats(url, what);
    AckTally tally;
    jsOptions options;
    jsOptions_Init(&options);
    options.Wait = kNatsApiTimeoutMs;
    options.PublishAsync.MaxPending = window;
    options.PublishAsync.AckHandler = count_ack;
    options.PublishAsync.AckHandlerClosure = &tally;
    options.PublishAsync.StallWait = kNatsApiTimeoutMs;
    jsCtx* raw_js = nullptr;
    check_nats(natsConnection_JetStream(&raw_js, connection.get(), &options),
               what + ": JetStream context");
    const NatsPtr<jsCtx> js{raw_js};
    const auto start = std::chrono::steady_clock::now();
    for (std::int64_t i = 1; i <= count; ++i) {
        natsMsg* raw = nullptr;
        check_nats(natsMsg_Create(&raw, subject.c_str(), nullptr, body.data(),
                                  static_cast<int>(body.size())),
                   what + ": message");
        NatsPtr<natsMsg> message{raw};
        check_nats(
            natsMsgHeader_Set(message.get(), "Nats-Msg-Id", ("limit-" + std::to_string(i)).c_str()),
            what + ": header");
        for (const auto& [key, value] : limit_headers(i)) {
            check_nats(natsMsgHeader_Set(message.get(), key.c_str(), value.c_str()),
                       what + ": header");
        }
        raw = message.release();
        const natsStatus status = js_PublishMsgAsync(js.get(), &raw, nullptr);
        message.reset(raw);  // still ours when the publish failed
        check_nats(status, what + ": publish " + std::to_string(i));
    }
    jsPubOptions complete;
    jsPubOptions_Init(&complete);
    complete.MaxWait = 60'000;
    check_nats(js_PublishAsyncComplete(js.get(), &complete), what + ": waiting for acks");
    const double seconds = seconds_since(start);
    if (tally.failed.load() > 0 || tally.acked.load() != count) {
        throw std::runtime_error(what + ": " + std::to_string(tally.acked.load()) + " of " +
                                 std::to_string(count) + " acknowledged, " +
                                 std::to_string(tally.failed.load()) + " refused (first error " +
                                 std::to_string(tally.first_error.load()) + ")");
    }
    return seconds;
}

// ---- AMQP administration ----

void declare_exchange(const std::string& url, const std::string& name, const std::string& type) {
    AmqpSession session{url, "declare_exchange " + name};
    amqp_exchange_declare(session.get(), kAmqpChannel, amqp_cstring_bytes(name.c_str()),
                          amqp_cstring_bytes(type.c_str()), /*passive=*/0, /*durable=*/1,
                          /*auto_delete=*/0, /*internal=*/0, amqp_empty_table);
    session.check(amqp_get_rpc_reply(session.get()), "exchange.declare");
}

void declare_queue_bound(const std::string& url, const std::string& queue,
                         const std::string& exchange, const std::string& binding_key) {
    AmqpSession session{url, "declare_queue_bound " + queue};
    amqp_queue_declare(session.get(), kAmqpChannel, amqp_cstring_bytes(queue.c_str()),
                       /*passive=*/0, /*durable=*/1, /*exclusive=*/0, /*auto_delete=*/0,
                       amqp_empty_table);
    session.check(amqp_get_rpc_reply(session.get()), "queue.declare");
    amqp_queue_bind(session.get(), kAmqpChannel, amqp_cstring_bytes(queue.c_str()),
                    amqp_cstring_bytes(exchange.c_str()), amqp_cstring_bytes(binding_key.c_str()),
                    amqp_empty_table);
    session.check(amqp_get_rpc_reply(session.get()), "queue.bind to " + exchange);
}

std::uint64_t queue_messages(const std::string& url, const std::string& queue) {
    AmqpSession session{url, "queue_messages " + queue};
    const auto* declared =
        amqp_queue_declare(session.get(), kAmqpChannel, amqp_cstring_bytes(queue.c_str()),
                           /*passive=*/1, 0, 0, 0, amqp_empty_table);
    session.check(amqp_get_rpc_reply(session.get()), "queue.declare (passive)");
    return declared->message_count;
}

std::vector<StoredMessage> drain_queue(const std::string& url, const std::string& queue) {
    AmqpSession session{url, "drain_queue " + queue};
    std::vector<StoredMessage> messages;
    for (;;) {
        const auto got = amqp_basic_get(session.get(), kAmqpChannel,
                                        amqp_cstring_bytes(queue.c_str()), /*no_ack=*/1);
        session.check(got, "basic.get");
        if (got.reply.id == AMQP_BASIC_GET_EMPTY_METHOD) break;
        StoredMessage stored;
        // Copied before reading the content, which may reuse the frame's memory.
        stored.subject =
            bytes_text(static_cast<amqp_basic_get_ok_t*>(got.reply.decoded)->routing_key);
        amqp_message_t message;
        session.check(amqp_read_message(session.get(), kAmqpChannel, &message, 0),
                      "reading a message");
        stored.data = bytes_text(message.body);
        const auto& properties = message.properties;
        if (properties._flags & AMQP_BASIC_MESSAGE_ID_FLAG) {
            stored.message_id = bytes_text(properties.message_id);
        }
        if (properties._flags & AMQP_BASIC_DELIVERY_MODE_FLAG) {
            stored.delivery_mode = properties.delivery_mode;
        }
        if (properties._flags & AMQP_BASIC_HEADERS_FLAG) {
            for (int i = 0; i < properties.headers.num_entries; ++i) {
                const auto& entry = properties.headers.entries[i];
                stored.headers.emplace(bytes_text(entry.key), field_text(entry.value));
            }
        }
        amqp_destroy_message(&message);
        amqp_maybe_release_buffers(session.get());
        messages.push_back(std::move(stored));
    }
    return messages;
}

std::uint64_t purge_queue(const std::string& url, const std::string& queue) {
    AmqpSession session{url, "purge_queue " + queue};
    const auto* purged =
        amqp_queue_purge(session.get(), kAmqpChannel, amqp_cstring_bytes(queue.c_str()));
    session.check(amqp_get_rpc_reply(session.get()), "queue.purge");
    return purged->message_count;
}

double amqp_publish_confirmed(const std::string& url, const std::string& exchange,
                              const std::string& routing_key, std::int64_t count,
                              const std::string& body, int window) {
    AmqpSession session{url, "amqp_publish_confirmed " + exchange};
    amqp_confirm_select(session.get(), kAmqpChannel);
    session.check(amqp_get_rpc_reply(session.get()), "confirm.select");
    // Delivery tags 1..count; acked[tag] once confirmed. Tags below `low` are all confirmed.
    std::vector<char> acked(static_cast<std::size_t>(count) + 1, 0);
    std::uint64_t low = 1;
    std::int64_t confirmed = 0;
    std::int64_t sent = 0;
    const auto confirm = [&](std::uint64_t tag) {
        if (tag == 0 || tag > static_cast<std::uint64_t>(sent)) {
            session.fail("basic.ack", "unknown delivery tag " + std::to_string(tag));
        }
        if (acked[tag] == 0) {
            acked[tag] = 1;
            ++confirmed;
        }
    };
    const auto bytes = [](const std::string& text) {
        return amqp_bytes_t{text.size(), const_cast<char*>(text.data())};
    };
    const auto start = std::chrono::steady_clock::now();
    while (confirmed < count) {
        while (sent < count && sent - confirmed < window) {
            const auto id = "limit-" + std::to_string(sent + 1);
            const auto headers = limit_headers(sent + 1);
            std::vector<amqp_table_entry_t> entries(headers.size());
            for (std::size_t i = 0; i < headers.size(); ++i) {
                entries[i].key = bytes(headers[i].first);
                entries[i].value.kind = AMQP_FIELD_KIND_UTF8;
                entries[i].value.value.bytes = bytes(headers[i].second);
            }
            amqp_basic_properties_t properties{};
            properties._flags = AMQP_BASIC_CONTENT_TYPE_FLAG | AMQP_BASIC_DELIVERY_MODE_FLAG |
                                AMQP_BASIC_MESSAGE_ID_FLAG | AMQP_BASIC_HEADERS_FLAG;
            properties.content_type = amqp_cstring_bytes("application/json");
            properties.delivery_mode = AMQP_DELIVERY_PERSISTENT;
            properties.message_id = bytes(id);
            properties.headers = {static_cast<int>(entries.size()), entries.data()};
            const int status =
                amqp_basic_publish(session.get(), kAmqpChannel, bytes(exchange), bytes(routing_key),
                                   /*mandatory=*/1, /*immediate=*/0, &properties, bytes(body));
            if (status != AMQP_STATUS_OK) {
                session.fail("publish " + std::to_string(sent + 1), amqp_error_string2(status));
            }
            ++sent;
            // Take whatever acks already arrived, without waiting.
            if (amqp_data_in_buffer(session.get()) == 0 &&
                amqp_frames_enqueued(session.get()) == 0) {
                continue;
            }
            break;
        }
        // Wait for a frame only when the window is full or everything is sent.
        const bool must_wait = sent == count || sent - confirmed >= window;
        timeval timeout{must_wait ? kAmqpTimeoutSeconds : 0, 0};
        amqp_frame_t frame;
        const int status = amqp_simple_wait_frame_noblock(session.get(), &frame, &timeout);
        if (status == AMQP_STATUS_TIMEOUT) {
            if (must_wait) session.fail("waiting for confirms", "timed out");
            continue;
        }
        if (status != AMQP_STATUS_OK)
            session.fail("waiting for confirms", amqp_error_string2(status));
        if (frame.frame_type != AMQP_FRAME_METHOD) continue;
        switch (frame.payload.method.id) {
            case AMQP_BASIC_ACK_METHOD: {
                const auto* ack = static_cast<amqp_basic_ack_t*>(frame.payload.method.decoded);
                if (ack->multiple) {
                    for (auto tag = low; tag <= ack->delivery_tag; ++tag) confirm(tag);
                } else {
                    confirm(ack->delivery_tag);
                }
                while (low <= static_cast<std::uint64_t>(sent) && acked[low] != 0) ++low;
                break;
            }
            case AMQP_BASIC_NACK_METHOD:
                session.fail("confirms", "the broker nacked a message");
            case AMQP_BASIC_RETURN_METHOD:
                session.fail("confirms", "the broker returned a message (no queue bound?)");
            case AMQP_CHANNEL_CLOSE_METHOD:
            case AMQP_CONNECTION_CLOSE_METHOD:
                session.fail("confirms", "the broker closed the channel or connection");
            default:
                break;
        }
        amqp_maybe_release_buffers(session.get());
    }
    return seconds_since(start);
}

}  // namespace outboxd::broker_admin
