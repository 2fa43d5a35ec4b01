#pragma once

// WorkerSession's member definitions, a template over the stream. Beast's WebSocket stream is
// among the costliest code to compile, over TLS most of all: each stream is instantiated in a
// translation unit of its own (worker_session_plain.cpp, worker_session_tls.cpp), which a
// parallel build compiles side by side.

#include <spdlog/spdlog.h>

#include "outboxd/util/untrusted_text.hpp"
#include "worker_session.hpp"

namespace outboxd::sinks::websocket {

namespace beast = boost::beast;
namespace ws = beast::websocket;
namespace protocol = worker::protocol;

// A random 16-hex-digit session id (websocket_sinks.cpp).
[[nodiscard]] std::string new_session_id();

// What the worker said in its hello, as the sink it attaches as.
[[nodiscard]] SinkProfile profile_of(const protocol::Hello& hello);

template <typename Stream>
WorkerSession<Stream>::WorkerSession(Stream stream, std::unique_ptr<http::ConnectionSlot> slot,
                                     std::shared_ptr<boost::asio::ssl::context> tls,
                                     std::shared_ptr<const auth::Grant> grant,
                                     WebSocketSinks::Hub& hub)
    : slot_(std::move(slot)),
      tls_(std::move(tls)),
      ws_(std::move(stream)),
      hello_timer_(ws_.get_executor()),
      grant_(std::move(grant)),
      hub_(hub),
      session_id_(new_session_id()) {}

template <typename Stream>
WorkerSession<Stream>::~WorkerSession() = default;

template <typename Stream>
void WorkerSession<Stream>::run(beast::http::request<beast::http::string_body> upgrade) {
    auto timeouts = ws::stream_base::timeout::suggested(beast::role_type::server);
    timeouts.handshake_timeout = std::chrono::seconds{10};
    timeouts.idle_timeout = hub_.settings.idle_timeout;
    timeouts.keep_alive_pings = true;  // ping at half the idle timeout; a dead peer times out
    ws_.set_option(timeouts);
    ws_.read_message_max(hub_.settings.max_frame_bytes);
    ws_.set_option(ws::stream_base::decorator(
        [](ws::response_type& response) { response.set(beast::http::field::server, "outboxd"); }));
    ws_.async_accept(upgrade, [self = this->shared_from_this()](beast::error_code ec) {
        if (ec) return;
        self->hub_.sessions[self->session_id_] = self;
        // A connection that never says hello would hold its slot for as long as it answers
        // pings: it gets this long to say it.
        self->hello_timer_.expires_after(self->hub_.settings.hello_timeout);
        self->hello_timer_.async_wait([weak = self->weak_from_this()](beast::error_code wait_ec) {
            const auto session = weak.lock();
            if (wait_ec || !session || session->greeted_ || session->closing_) return;
            session->reject(protocol::code::kHelloRequired,
                            "no hello within " +
                                std::to_string(session->hub_.settings.hello_timeout.count()) +
                                " ms of the upgrade",
                            true);
        });
        self->read();
    });
}

template <typename Stream>
void WorkerSession<Stream>::read() {
    ws_.async_read(buffer_, [self = this->shared_from_this()](beast::error_code ec, std::size_t) {
        self->on_read(ec);
    });
}

template <typename Stream>
void WorkerSession<Stream>::on_read(beast::error_code ec) {
    if (ec) {
        if (ec == ws::error::message_too_big) {
            // Beast has already failed the connection with close code 1009 (too big).
            hub_.metrics.protocol_errors_total
                .Add({{"code", std::string{protocol::code::kFrameTooLarge}}})
                .Increment();
        }
        return finish(ec.message());
    }
    if (closing_) return;
    // One fault, one session: whatever a handler throws ends this session, never the node.
    try {
        if (!ws_.got_text()) {
            buffer_.consume(buffer_.size());
            reject(protocol::code::kBadJson, "frames must be text frames holding one JSON object",
                   !greeted_);
        } else {
            const std::string text = beast::buffers_to_string(buffer_.data());
            buffer_.consume(buffer_.size());
            handle(text);
        }
    } catch (const std::exception& error) {
        hub_.fault(error.what());
        reject(protocol::code::kInternal, "the frame could not be handled", true);
    }
    if (!closing_) read();
}

template <typename Stream>
void WorkerSession<Stream>::handle(const std::string& text) {
    auto parsed = protocol::parse_worker_frame(text);
    if (auto* error = std::get_if<protocol::ProtocolError>(&parsed)) {
        // Before hello the session has nothing to continue with; after it, a bad frame is
        // answered and the session carries on.
        return reject(error->code, error->message, !greeted_);
    }
    for (auto& message : std::get<std::vector<protocol::WorkerMessage>>(parsed)) {
        if (closing_) return;
        handle_message(message);
    }
}

template <typename Stream>
void WorkerSession<Stream>::handle_message(protocol::WorkerMessage& message) {
    if (auto* hello = std::get_if<protocol::Hello>(&message)) {
        if (greeted_)
            return reject(protocol::code::kDuplicateHello, "hello was already accepted", false);
        return handle_hello(std::move(*hello));
    }
    if (!greeted_) {
        return reject(protocol::code::kHelloRequired, "the first frame must be a hello", true);
    }
    auto& port = hub_.port;
    auto answer = Answer::accepted;
    const std::string* task_id = nullptr;
    if (auto* complete = std::get_if<protocol::Complete>(&message)) {
        task_id = &complete->task_id;
        if (auto problem = result_problem(complete->result_json)) {
            // Refused whole: the task stays outstanding, for an answer the node can keep.
            return reject(protocol::code::kResultRefused,
                          "result of task '" + complete->task_id + "' " + *problem +
                              "; the task is still outstanding",
                          false);
        }
        answer = port.complete(session_id_, complete->task_id, std::move(complete->result_json));
    } else if (auto* fail = std::get_if<protocol::Fail>(&message)) {
        task_id = &fail->task_id;
        answer = port.fail(session_id_, fail->task_id, std::move(fail->error), fail->retryable);
    } else if (auto* beat = std::get_if<protocol::Heartbeat>(&message)) {
        if (port.heartbeat(session_id_, beat->task_id, std::move(beat->progress_json)) ==
            Answer::unknown_task) {
            // Timed out, settled elsewhere, or never this connection's: the worker should stop.
            send_cancel(beat->task_id, "the task is not outstanding on this connection");
        }
        return;
    } else if (auto* credit = std::get_if<protocol::Credit>(&message)) {
        port.set_credit(session_id_, credit->max_in_flight);
    }
    if (answer == Answer::unknown_task) {
        reject(protocol::code::kUnknownTask,
               "no outstanding task '" + *task_id + "' on this connection", false);
    }
}

template <typename Stream>
std::optional<std::string> WorkerSession<Stream>::result_problem(const std::string& result) const {
    const auto limit = hub_.settings.max_result_bytes;
    if (result == "null") return std::nullopt;  // none, kept as none
    if (result.size() > limit) {
        return "is " + std::to_string(result.size()) + " bytes, more than the node keeps (" +
               std::to_string(limit) + ", OUTBOXD_MAX_RESULT_BYTES)";
    }
    if (util::json_text_has_nul(result)) {
        return "contains \\u0000, which PostgreSQL jsonb cannot store";
    }
    return std::nullopt;
}

template <typename Stream>
std::optional<std::string> WorkerSession<Stream>::hello_refusal(
    const protocol::Hello& hello) const {
    for (const auto& ns : hello.namespaces) {
        if (!grant_->may(auth::Role::worker, ns)) {
            return "this credential is not a worker of namespace '" + util::log_safe(ns, 128) + "'";
        }
    }
    if (!grant_->may_use_node(hello.node)) {
        return hello.node ? "this credential may not claim on node '" +
                                util::log_safe(*hello.node, 128) + "'"
                          : std::string{"this credential must name one of its nodes in hello"};
    }
    return std::nullopt;
}

template <typename Stream>
std::string WorkerSession<Stream>::peer() const {
    beast::error_code ec;
    const auto endpoint = beast::get_lowest_layer(ws_).socket().remote_endpoint(ec);
    if (ec) return "unknown";
    return endpoint.address().to_string() + ":" + std::to_string(endpoint.port());
}

template <typename Stream>
void WorkerSession<Stream>::handle_hello(protocol::Hello hello) {
    if (auto refused = hello_refusal(hello)) {
        spdlog::warn("event=worker_refused session={} credential={} peer={} reason=\"{}\"",
                     session_id_, util::log_safe(grant_->credential_id), peer(),
                     util::log_safe(*refused));
        return reject(protocol::code::kForbidden, *refused, true);
    }
    greeted_ = true;
    hello_timer_.cancel();
    if (hello.batch) batch_max_bytes_ = protocol::batch_bytes_for(hello.max_frame_bytes);
    peer_max_frame_bytes_ = hello.max_frame_bytes;
    std::string namespaces;
    for (const auto& ns : hello.namespaces) {
        if (!namespaces.empty()) namespaces += ',';
        namespaces += ns;
    }
    spdlog::info(
        "event=worker_joined session={} worker=\"{}\" credential={} peer={} namespaces=\"{}\" "
        "task_queue=\"{}\" max_in_flight={}",
        session_id_, util::log_safe(hello.worker_id), util::log_safe(grant_->credential_id), peer(),
        util::log_safe(namespaces, 400), util::log_safe(hello.task_queue), hello.max_in_flight);
    const auto cluster = hub_.cluster();
    protocol::Welcome welcome;
    welcome.node_id = cluster.node_id;
    welcome.session_id = session_id_;
    welcome.batch = true;
    welcome.max_frame_bytes = hub_.settings.max_frame_bytes;
    welcome.max_result_bytes = hub_.settings.max_result_bytes;
    welcome.cluster = cluster.nodes;
    if (welcome.cluster.empty())
        welcome.cluster.push_back({welcome.node_id, cluster.advertise_url, {}, {}});
    // Alone, never in a batch: the worker learns from it that batches may follow.
    enqueue(protocol::encode(welcome), /*alone=*/true);
    hub_.metrics.workers_connected.Increment();
    hub_.port.attach(session_id_, profile_of(hello), this->shared_from_this());
}

template <typename Stream>
void WorkerSession<Stream>::reject(std::string_view code, const std::string& message, bool fatal) {
    hub_.metrics.protocol_errors_total.Add({{"code", std::string{code}}}).Increment();
    send(protocol::encode(protocol::Error{std::string{code}, message}));
    if (fatal) close(message);
}

template <typename Stream>
std::optional<std::string> WorkerSession<Stream>::send_task(const sinks::Task& task) {
    auto encoded = protocol::encode_task_for(task, peer_max_frame_bytes_);
    if (!encoded.refused.empty()) return std::move(encoded.refused);
    send(std::move(encoded.frame));
    return std::nullopt;
}

template <typename Stream>
void WorkerSession<Stream>::send_cancel(const std::string& task_id, std::string_view reason) {
    hub_.metrics.cancels_sent_total.Increment();
    send(protocol::encode(protocol::Cancel{task_id, std::string{reason}}));
}

template <typename Stream>
void WorkerSession<Stream>::send(std::string frame) {
    enqueue(std::move(frame), /*alone=*/false);
}

template <typename Stream>
void WorkerSession<Stream>::enqueue(std::string frame, bool alone) {
    if (closing_ || finished_) return;
    // One frame larger than the byte bound still goes, alone: the bound is on what piles up
    // behind a write, not on what a row may hold.
    if (queue_.size() >= hub_.settings.max_write_queue ||
        (!queue_.empty() && queue_.bytes() + frame.size() > hub_.settings.max_write_queue_bytes)) {
        hub_.metrics.slow_consumers_closed_total.Increment();
        spdlog::warn("event=slow_consumer_closed session={} queued_frames={} queued_bytes={}",
                     session_id_, queue_.size(), queue_.bytes());
        queue_.clear();
        closing_ = true;
        beast::get_lowest_layer(ws_).close();
        // Reported from a handler of its own, never from here: this runs inside the read
        // handler (no read pending to report the loss) or inside the dispatcher's loop over
        // the workers it pushes to, which must not see the worker vanish mid-loop.
        boost::asio::post(ws_.get_executor(), [self = this->shared_from_this()] {
            self->finish("closed as too slow");
        });
        return;
    }
    queue_.push(std::move(frame), alone);
    schedule_write();
}

// The write starts once the current handler is done, so that every frame it queues (a
// dispatch round's tasks) leaves in the same write.
template <typename Stream>
void WorkerSession<Stream>::schedule_write() {
    if (writing_) return;
    writing_ = true;
    boost::asio::post(ws_.get_executor(),
                      [self = this->shared_from_this()] { self->write_next(); });
}

template <typename Stream>
void WorkerSession<Stream>::write_next() {
    if (queue_.empty()) {
        writing_ = false;
        if (closing_ && !close_reason_.empty()) {
            auto reason = std::move(close_reason_);
            close_reason_.clear();
            ws_.async_close(ws::close_reason(ws::close_code::policy_error, reason),
                            [self = this->shared_from_this(), reason](beast::error_code) {
                                self->finish(reason);
                            });
        }
        return;
    }
    writing_ = true;
    in_write_ = queue_.take(batch_max_bytes_ > 0, batch_max_bytes_);
    ws_.text(true);
    ws_.async_write(boost::asio::buffer(in_write_),
                    [self = this->shared_from_this()](beast::error_code ec, std::size_t) {
                        if (ec) {
                            self->queue_.clear();
                            self->writing_ = false;
                            // A read may be pending and fail too; finish() runs once.
                            beast::get_lowest_layer(self->ws_).close();
                            return self->finish(ec.message());
                        }
                        self->write_next();
                    });
}

template <typename Stream>
void WorkerSession<Stream>::close(std::string_view reason) {
    if (closing_ || finished_) return;
    closing_ = true;
    // Flush queued frames (the error that explains the close goes first), then close.
    close_reason_ = std::string{reason.substr(0, 120)};  // close reasons are at most 123 bytes
    if (close_reason_.empty()) close_reason_ = "closing";
    schedule_write();
}

template <typename Stream>
void WorkerSession<Stream>::finish(const std::string& why) {
    if (finished_) return;
    finished_ = true;
    hello_timer_.cancel();
    hub_.sessions.erase(session_id_);
    if (greeted_) {
        hub_.metrics.workers_connected.Decrement();
        spdlog::info("event=worker_left session={} reason=\"{}\"", session_id_,
                     util::log_safe(why));
        hub_.port.detach(session_id_);
    }
}

}  // namespace outboxd::sinks::websocket
