#pragma once

// One worker's WebSocket connection: the protocol of design §5 on the node side. Frames are
// parsed and routed to the registry and dispatcher; every bad frame gets an error frame
// naming the problem; writes are queued and bounded (a consumer that falls behind by more
// than max_write_queue frames is closed and counted); idle connections are pinged and a
// dead peer is dropped.

#include <deque>
#include <memory>
#include <string>

#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket.hpp>

#include "outboxd/worker/worker_registry.hpp"
#include "server_impl.hpp"

namespace outboxd::http {

class WorkerSession : public std::enable_shared_from_this<WorkerSession>,
                      public worker::WorkerChannel {
public:
    WorkerSession(boost::asio::ip::tcp::socket socket, HttpServer::Impl& server);
    ~WorkerSession() override;

    void run(boost::beast::http::request<boost::beast::http::string_body> upgrade);

    // WorkerChannel (loop thread).
    void send(std::string frame) override;
    void close(std::string_view reason) override;

    [[nodiscard]] bool greeted() const { return greeted_; }

private:
    void read();
    void on_read(boost::beast::error_code ec);
    void handle(const std::string& text);
    void handle_hello(worker::protocol::Hello hello);
    void reject(std::string_view code, const std::string& message, bool fatal);
    void write_next();
    void finish(const std::string& why);

    boost::beast::websocket::stream<boost::beast::tcp_stream> ws_;
    boost::beast::flat_buffer buffer_;
    std::deque<std::string> queue_;
    HttpServer::Impl& server_;
    std::string session_id_;
    bool writing_ = false;
    bool greeted_ = false;    // hello accepted
    bool closing_ = false;    // close requested: no more reads are handled
    bool finished_ = false;   // loss reported to the dispatcher
    std::string close_reason_;
};

}  // namespace outboxd::http
