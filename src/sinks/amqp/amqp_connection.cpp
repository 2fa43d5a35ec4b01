#include "amqp_connection.hpp"

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>

#include <amqp.h>
#include <amqp_ssl_socket.h>
#include <amqp_tcp_socket.h>
#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/ssl.h>
#include <openssl/x509_vfy.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "outboxd/util/untrusted_text.hpp"

namespace outboxd::sinks::amqp::detail {
namespace {

using Clock = std::chrono::steady_clock;

// The publishing channel, and the one exchanges are checked on: a passive declare of a
// missing exchange closes its channel, which must not be the one with confirms outstanding.
constexpr amqp_channel_t kPublishChannel = 1;
constexpr amqp_channel_t kCheckChannel = 2;
constexpr int kFrameMax = 131072;  // RabbitMQ's default
// Heartbeats find a broker gone silent (a partition) within two of them.
constexpr int kHeartbeatSeconds = 10;
constexpr std::uint16_t kNotFound = 404;

std::string text_of(amqp_bytes_t bytes, std::size_t max = 300) {
    if (bytes.bytes == nullptr) return {};
    return util::sanitize_text({static_cast<const char*>(bytes.bytes), bytes.len}, max);
}

amqp_bytes_t bytes_of(const std::string& text) {
    return {text.size(), const_cast<char*>(text.data())};
}

// Whether `host` is an IPv4 or IPv6 address rather than a name.
bool is_ip_literal(const std::string& host) {
    in6_addr address{};
    return ::inet_pton(AF_INET, host.c_str(), &address) == 1 ||
           ::inet_pton(AF_INET6, host.c_str(), &address) == 1;
}

timeval timeval_of(std::chrono::milliseconds ms) {
    return {static_cast<time_t>(ms.count() / 1000),
            static_cast<suseconds_t>(ms.count() % 1000 * 1000)};
}

std::string status_text(int status) { return amqp_error_string2(status); }

std::string close_text(const char* who, std::uint16_t code, amqp_bytes_t text) {
    return std::string{"the broker closed the "} + who + ": " + std::to_string(code) + " " +
           text_of(text);
}

std::string reply_text(const amqp_rpc_reply_t& reply) {
    switch (reply.reply_type) {
        case AMQP_RESPONSE_NORMAL:
            return "ok";
        case AMQP_RESPONSE_NONE:
            return "no reply from the broker";
        case AMQP_RESPONSE_LIBRARY_EXCEPTION:
            return status_text(reply.library_error);
        case AMQP_RESPONSE_SERVER_EXCEPTION:
            if (reply.reply.id == AMQP_CONNECTION_CLOSE_METHOD) {
                const auto* close = static_cast<amqp_connection_close_t*>(reply.reply.decoded);
                return close_text("connection", close->reply_code, close->reply_text);
            }
            if (reply.reply.id == AMQP_CHANNEL_CLOSE_METHOD) {
                const auto* close = static_cast<amqp_channel_close_t*>(reply.reply.decoded);
                return close_text("channel", close->reply_code, close->reply_text);
            }
            return "unexpected answer from the broker (method " + std::to_string(reply.reply.id) +
                   ")";
    }
    return "unknown answer from the broker";
}

std::optional<std::string> rpc_problem(amqp_connection_state_t conn, const char* what) {
    const auto reply = amqp_get_rpc_reply(conn);
    if (reply.reply_type == AMQP_RESPONSE_NORMAL) return std::nullopt;
    return std::string{what} + ": " + reply_text(reply);
}

std::string header_value(const amqp_table_t& table, std::string_view name) {
    for (int i = 0; i < table.num_entries; ++i) {
        const auto& entry = table.entries[i];
        const std::string_view key{static_cast<const char*>(entry.key.bytes), entry.key.len};
        if (key == name && (entry.value.kind == AMQP_FIELD_KIND_UTF8 ||
                            entry.value.kind == AMQP_FIELD_KIND_BYTES)) {
            const auto& value = entry.value.value.bytes;
            return {static_cast<const char*>(value.bytes), value.len};
        }
    }
    return {};
}

}  // namespace

Stopper::Stopper() : event_fd_(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {}

Stopper::~Stopper() {
    if (event_fd_ >= 0) ::close(event_fd_);
}

void Stopper::stop() {
    {
        std::lock_guard lock{mutex_};
        stopping_ = true;
        if (socket_fd_ >= 0) ::shutdown(socket_fd_, SHUT_RDWR);
    }
    wake();
}

bool Stopper::stopping() const {
    std::lock_guard lock{mutex_};
    return stopping_;
}

void Stopper::wake() {
    const std::uint64_t one = 1;
    (void)!::write(event_fd_, &one, sizeof one);
}

void Stopper::drain() {
    std::uint64_t count = 0;
    (void)!::read(event_fd_, &count, sizeof count);
}

void Stopper::attach(int socket_fd) {
    std::lock_guard lock{mutex_};
    socket_fd_ = socket_fd;
    if (stopping_ && socket_fd_ >= 0) ::shutdown(socket_fd_, SHUT_RDWR);
}

AmqpConnection::AmqpConnection(Stopper& stopper)
    : stopper_(stopper), conn_(amqp_new_connection()) {}

AmqpConnection::~AmqpConnection() {
    stopper_.attach(-1);  // before the socket closes: its number may be reused at once
    if (conn_ != nullptr) amqp_destroy_connection(conn_);
}

std::optional<std::string> AmqpConnection::connect_tcp(
    const std::vector<sockaddr_storage>& addresses, std::uint16_t port,
    std::chrono::milliseconds timeout) {
    // A connect of our own to the addresses that passed the policy (rabbitmq-c would resolve
    // the name again), which stop() can interrupt through the wake fd.
    const auto deadline = Clock::now() + timeout;
    std::string why = "no address to connect to";
    for (const auto& address : addresses) {
        const int fd = ::socket(address.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (fd < 0) {
            why = std::strerror(errno);
            continue;
        }
        const auto length =
            address.ss_family == AF_INET6 ? sizeof(sockaddr_in6) : sizeof(sockaddr_in);
        int error =
            ::connect(fd, reinterpret_cast<const sockaddr*>(&address), length) == 0 ? 0 : errno;
        while (error == EINPROGRESS) {
            std::array<pollfd, 2> polls{pollfd{fd, POLLOUT, 0},
                                        pollfd{stopper_.wake_fd(), POLLIN, 0}};
            const auto left =
                std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
            if (left.count() <= 0) {
                error = ETIMEDOUT;
                break;
            }
            if (::poll(polls.data(), polls.size(), static_cast<int>(left.count())) < 0 &&
                errno != EINTR) {
                error = errno;
                break;
            }
            if (polls[1].revents != 0) stopper_.drain();
            if (stopper_.stopping()) {
                ::close(fd);
                return std::string{"stopped"};
            }
            if (polls[0].revents != 0) {
                socklen_t size = sizeof error;
                if (::getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &size) != 0) error = errno;
            }
        }
        if (error != 0) {
            why = std::strerror(error);
            ::close(fd);
            continue;
        }
        const int one = 1;
        ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        amqp_socket_t* socket = amqp_tcp_socket_new(conn_);
        if (socket == nullptr) {
            ::close(fd);
            return std::string{"out of memory"};
        }
        amqp_tcp_socket_set_sockfd(socket, fd);
        stopper_.attach(fd);
        return std::nullopt;
    }
    return "cannot connect to port " + std::to_string(port) + ": " + why;
}

std::optional<std::string> AmqpConnection::open(const ConnectSettings& settings,
                                                const std::vector<sockaddr_storage>& addresses) {
    if (conn_ == nullptr) return std::string{"out of memory"};
    const auto timeout = timeval_of(settings.timeout);
    if (!settings.url.tls) {
        if (auto why = connect_tcp(addresses, settings.url.port, settings.timeout)) return why;
    } else {
        amqp_socket_t* socket = amqp_ssl_socket_new(conn_);
        if (socket == nullptr) return std::string{"cannot make a TLS socket"};
        amqp_ssl_socket_set_verify_peer(socket, 1);
        auto* context = static_cast<SSL_CTX*>(amqp_ssl_socket_get_context(socket));
        if (is_ip_literal(settings.url.host)) {
            // rabbitmq-c matches the host against DNS names only: an address is checked by
            // OpenSSL against the certificate's IP addresses while it verifies the chain.
            amqp_ssl_socket_set_verify_hostname(socket, 0);
            if (X509_VERIFY_PARAM_set1_ip_asc(SSL_CTX_get0_param(context),
                                              settings.url.host.c_str()) != 1) {
                return std::string{"cannot check the broker's certificate against its address"};
            }
        } else {
            amqp_ssl_socket_set_verify_hostname(socket, 1);
        }
        if (settings.ca_file) {
            if (const int rc = amqp_ssl_socket_set_cacert(socket, settings.ca_file->c_str());
                rc != AMQP_STATUS_OK) {
                return "cannot read ca_file " + util::sanitize_text(*settings.ca_file, 200) + ": " +
                       status_text(rc);
            }
        } else {
            // rabbitmq-c's context trusts nothing until told: the system's store, as HTTPS does.
            SSL_CTX_set_default_verify_paths(context);
        }
        if (const int rc = amqp_socket_open_noblock(socket, settings.url.host.c_str(),
                                                    settings.url.port, &timeout);
            rc != AMQP_STATUS_OK) {
            return "cannot connect: " + status_text(rc);
        }
        stopper_.attach(amqp_get_sockfd(conn_));
    }
    if (amqp_set_handshake_timeout(conn_, &timeout) != AMQP_STATUS_OK ||
        amqp_set_rpc_timeout(conn_, &timeout) != AMQP_STATUS_OK) {
        return std::string{"cannot set the broker's timeouts"};
    }
    if (auto why = login(settings)) return why;
    amqp_channel_open(conn_, kPublishChannel);
    if (auto why = rpc_problem(conn_, "channel.open")) return why;
    amqp_confirm_select(conn_, kPublishChannel);
    if (auto why = rpc_problem(conn_, "confirm.select")) return why;
    return std::nullopt;
}

std::optional<std::string> AmqpConnection::login(const ConnectSettings& settings) {
    // Asks for connection.blocked: a broker short of memory or disk says so instead of going
    // silent, and the channel stops taking tasks meanwhile.
    amqp_table_entry_t blocked{};
    blocked.key = amqp_cstring_bytes("connection.blocked");
    blocked.value.kind = AMQP_FIELD_KIND_BOOLEAN;
    blocked.value.value.boolean = 1;
    std::array<amqp_table_entry_t, 2> entries{};
    entries[0].key = amqp_cstring_bytes("capabilities");
    entries[0].value.kind = AMQP_FIELD_KIND_TABLE;
    entries[0].value.value.table = {1, &blocked};
    entries[1].key = amqp_cstring_bytes("connection_name");
    entries[1].value.kind = AMQP_FIELD_KIND_UTF8;
    entries[1].value.value.bytes = bytes_of(settings.connection_name);
    const amqp_table_t properties{static_cast<int>(entries.size()), entries.data()};
    const auto reply = amqp_login_with_properties(
        conn_, settings.url.vhost.c_str(), 0, kFrameMax, kHeartbeatSeconds, &properties,
        AMQP_SASL_METHOD_PLAIN, settings.user.c_str(), settings.password.c_str());
    if (reply.reply_type == AMQP_RESPONSE_NORMAL) return std::nullopt;
    return "login to vhost '" + util::sanitize_text(settings.url.vhost, 100) + "' as '" +
           util::sanitize_text(settings.user, 100) + "': " + reply_text(reply);
}

ExchangeCheck AmqpConnection::check_exchange(const std::string& exchange, std::string& why) {
    if (!check_channel_open_) {
        amqp_channel_open(conn_, kCheckChannel);
        if (auto problem = rpc_problem(conn_, "channel.open")) {
            why = *problem;
            return ExchangeCheck::broken;
        }
        check_channel_open_ = true;
    }
    amqp_exchange_declare(conn_, kCheckChannel, bytes_of(exchange), amqp_empty_bytes,
                          /*passive=*/1, /*durable=*/0, /*auto_delete=*/0, /*internal=*/0,
                          amqp_empty_table);
    const auto reply = amqp_get_rpc_reply(conn_);
    auto result = ExchangeCheck::exists;
    if (reply.reply_type == AMQP_RESPONSE_SERVER_EXCEPTION &&
        reply.reply.id == AMQP_CHANNEL_CLOSE_METHOD) {
        const auto code = static_cast<amqp_channel_close_t*>(reply.reply.decoded)->reply_code;
        why = reply_text(reply);
        // The channel is closed: acknowledged, and opened again for the next check.
        amqp_channel_close_ok_t ok{};
        check_channel_open_ = false;
        result = amqp_send_method(conn_, kCheckChannel, AMQP_CHANNEL_CLOSE_OK_METHOD, &ok) !=
                         AMQP_STATUS_OK
                     ? ExchangeCheck::broken
                 : code == kNotFound ? ExchangeCheck::missing
                                     : ExchangeCheck::refused;
    } else if (reply.reply_type != AMQP_RESPONSE_NORMAL) {
        why = "exchange.declare: " + reply_text(reply);
        result = ExchangeCheck::broken;
    }
    amqp_maybe_release_buffers_on_channel(conn_, kCheckChannel);
    return result;
}

std::optional<std::string> AmqpConnection::publish(const OutMessage& message) {
    std::vector<amqp_table_entry_t> headers(message.headers.size());
    for (std::size_t i = 0; i < headers.size(); ++i) {
        headers[i].key = bytes_of(message.headers[i].first);
        headers[i].value.kind = AMQP_FIELD_KIND_UTF8;
        headers[i].value.value.bytes = bytes_of(message.headers[i].second);
    }
    amqp_basic_properties_t properties{};
    properties._flags = AMQP_BASIC_CONTENT_TYPE_FLAG | AMQP_BASIC_DELIVERY_MODE_FLAG |
                        AMQP_BASIC_MESSAGE_ID_FLAG | AMQP_BASIC_HEADERS_FLAG;
    properties.content_type = amqp_cstring_bytes("application/json");
    properties.delivery_mode = AMQP_DELIVERY_PERSISTENT;
    properties.message_id = bytes_of(message.message_id);
    properties.headers = {static_cast<int>(headers.size()), headers.data()};
    const int rc = amqp_basic_publish(conn_, kPublishChannel, bytes_of(message.exchange),
                                      bytes_of(message.routing_key), /*mandatory=*/1,
                                      /*immediate=*/0, &properties, bytes_of(message.body));
    if (rc == AMQP_STATUS_OK) return std::nullopt;
    return "publish failed: " + status_text(rc);
}

std::optional<std::string> AmqpConnection::next_event(BrokerEvent& event) {
    event = BrokerEvent{};
    const timeval now{0, 0};
    while (event.type == BrokerEvent::Type::none) {
        amqp_frame_t frame{};
        const int rc = amqp_simple_wait_frame_noblock(conn_, &frame, &now);
        if (rc == AMQP_STATUS_TIMEOUT) return std::nullopt;
        if (rc != AMQP_STATUS_OK) return "connection lost: " + status_text(rc);
        std::optional<std::string> failure;
        if (frame.frame_type == AMQP_FRAME_METHOD) {
            const auto* decoded = frame.payload.method.decoded;
            switch (frame.payload.method.id) {
                case AMQP_BASIC_ACK_METHOD: {
                    const auto* ack = static_cast<const amqp_basic_ack_t*>(decoded);
                    event = {BrokerEvent::Type::ack, ack->delivery_tag, ack->multiple != 0, {}, {}};
                    break;
                }
                case AMQP_BASIC_NACK_METHOD: {
                    const auto* nack = static_cast<const amqp_basic_nack_t*>(decoded);
                    event = {
                        BrokerEvent::Type::nack, nack->delivery_tag, nack->multiple != 0, {}, {}};
                    break;
                }
                case AMQP_BASIC_RETURN_METHOD: {
                    // The message itself follows (content header, then body): the header's
                    // Outboxd-Task-Id names it.
                    const auto* back = static_cast<const amqp_basic_return_t*>(decoded);
                    returning_ = std::to_string(back->reply_code) + " " +
                                 text_of(back->reply_text) + " (exchange '" +
                                 text_of(back->exchange, 255) + "', routing key '" +
                                 text_of(back->routing_key, 255) + "')";
                    break;
                }
                case AMQP_CONNECTION_BLOCKED_METHOD:
                    event.type = BrokerEvent::Type::blocked;
                    event.text =
                        text_of(static_cast<const amqp_connection_blocked_t*>(decoded)->reason);
                    break;
                case AMQP_CONNECTION_UNBLOCKED_METHOD:
                    event.type = BrokerEvent::Type::unblocked;
                    break;
                case AMQP_CHANNEL_CLOSE_METHOD: {
                    const auto* close = static_cast<const amqp_channel_close_t*>(decoded);
                    amqp_channel_close_ok_t ok{};
                    (void)amqp_send_method(conn_, frame.channel, AMQP_CHANNEL_CLOSE_OK_METHOD, &ok);
                    if (frame.channel == kCheckChannel) {
                        check_channel_open_ = false;
                    } else {
                        failure = close_text("channel", close->reply_code, close->reply_text);
                    }
                    break;
                }
                case AMQP_CONNECTION_CLOSE_METHOD: {
                    const auto* close = static_cast<const amqp_connection_close_t*>(decoded);
                    amqp_connection_close_ok_t ok{};
                    (void)amqp_send_method(conn_, 0, AMQP_CONNECTION_CLOSE_OK_METHOD, &ok);
                    failure = close_text("connection", close->reply_code, close->reply_text);
                    break;
                }
                default:
                    break;
            }
        } else if (frame.frame_type == AMQP_FRAME_HEADER && returning_) {
            const auto* properties =
                static_cast<const amqp_basic_properties_t*>(frame.payload.properties.decoded);
            event.type = BrokerEvent::Type::returned;
            event.text = std::move(*returning_);
            returning_.reset();
            if (properties != nullptr && (properties->_flags & AMQP_BASIC_HEADERS_FLAG) != 0) {
                event.task_id = header_value(properties->headers, "Outboxd-Task-Id");
            }
        }
        // Body frames (a returned message's) carry nothing the channel needs.
        amqp_maybe_release_buffers_on_channel(conn_, frame.channel);
        if (failure) return failure;
    }
    return std::nullopt;
}

bool AmqpConnection::has_buffered() const {
    return amqp_frames_enqueued(conn_) != 0 || amqp_data_in_buffer(conn_) != 0;
}

int AmqpConnection::socket_fd() const { return amqp_get_sockfd(conn_); }

}  // namespace outboxd::sinks::amqp::detail
