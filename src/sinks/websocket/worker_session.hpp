#pragma once

// One worker's WebSocket connection: the worker protocol (README, "Worker protocol") on the
// node side, a sink. Its hello becomes a SinkProfile and attaches through the SinkPort;
// answers, heartbeats and credit frames become the port's calls; every bad frame
// gets an error frame naming the problem; writes are queued and bounded (a consumer that
// falls behind by more than max_write_queue frames or max_write_queue_bytes is closed and
// counted), and go out as batch frames to a worker that reads them; idle connections are
// pinged and a dead peer is dropped.
//
// Every way a session ends (the peer goes, a read or write fails, the node closes it, it is
// too slow) reaches finish() exactly once: the worker detaches (its tasks are re-armed) and
// leaves the hub's session map.

#include <memory>
#include <string>

#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket.hpp>

#include "hub.hpp"
#include "outboxd/worker/frame_queue.hpp"
#include "outboxd/worker/protocol.hpp"

namespace outboxd::sinks::websocket {

template <typename Stream>
class WorkerSession : public std::enable_shared_from_this<WorkerSession<Stream>>,
                      public SessionBase {
public:
    // Takes over the HTTP session's stream (after the upgrade request) and its slot.
    WorkerSession(Stream stream, std::unique_ptr<http::ConnectionSlot> slot,
                  std::shared_ptr<boost::asio::ssl::context> tls,
                  std::shared_ptr<const auth::Grant> grant, WebSocketSinks::Hub& hub);
    ~WorkerSession() override;

    void run(boost::beast::http::request<boost::beast::http::string_body> upgrade);

    // Sink (loop thread).
    [[nodiscard]] std::optional<std::string> send_task(const sinks::Task& task) override;
    void send_cancel(const std::string& task_id, std::string_view reason) override;
    void close(std::string_view reason) override;
    void send(std::string frame) override;

    [[nodiscard]] bool greeted() const override { return greeted_; }
    [[nodiscard]] const auth::Grant& grant() const override { return *grant_; }
    void end(std::string_view code, const std::string& message) override {
        reject(code, message, true);
    }

private:
    void read();
    void on_read(boost::beast::error_code ec);
    void handle(const std::string& text);
    void handle_message(worker::protocol::WorkerMessage& message);
    void handle_hello(worker::protocol::Hello hello);
    // Why the credential may not say `hello` (a namespace or node outside its grant), or
    // nullopt.
    [[nodiscard]] std::optional<std::string> hello_refusal(
        const worker::protocol::Hello& hello) const;
    [[nodiscard]] std::string peer() const;
    // Why a complete's result cannot be kept (too large, \u0000), or nullopt.
    [[nodiscard]] std::optional<std::string> result_problem(const std::string& result) const;
    void reject(std::string_view code, const std::string& message, bool fatal);
    void enqueue(std::string frame, bool alone);
    void schedule_write();
    void write_next();
    void finish(const std::string& why);

    std::unique_ptr<http::ConnectionSlot> slot_;
    std::shared_ptr<boost::asio::ssl::context> tls_;  // declared first: the stream uses it
    boost::beast::websocket::stream<Stream> ws_;
    boost::asio::steady_timer hello_timer_;
    boost::beast::flat_buffer buffer_;
    worker::protocol::FrameQueue queue_;
    std::string in_write_;  // the text of the write in flight
    std::shared_ptr<const auth::Grant> grant_;
    WebSocketSinks::Hub& hub_;
    std::string session_id_;
    bool writing_ = false;                  // a write is in flight or scheduled
    bool greeted_ = false;                  // hello accepted
    std::size_t batch_max_bytes_ = 0;       // the worker reads batch frames up to this; 0: none
    std::size_t peer_max_frame_bytes_ = 0;  // the largest frame the worker reads; 0: not stated
    bool closing_ = false;                  // close requested: no more reads are handled
    bool finished_ = false;                 // loss reported to the dispatcher
    std::string close_reason_;
};

extern template class WorkerSession<http::PlainStream>;
extern template class WorkerSession<http::TlsStream>;

}  // namespace outboxd::sinks::websocket
