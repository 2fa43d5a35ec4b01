#include "fake_node.hpp"

#include <deque>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket.hpp>

namespace outboxd::sdk::testing {
namespace {

namespace beast = boost::beast;
namespace http = beast::http;
namespace websocket = beast::websocket;
namespace net = boost::asio;
namespace protocol = worker::protocol;
using boost::system::error_code;
using net::ip::tcp;

}  // namespace

// Recorded state is guarded by Impl::mutex; the stream is touched on the node's thread only.
class FakeNode::Session : public std::enable_shared_from_this<FakeNode::Session> {
public:
    Session(FakeNode& node, tcp::socket socket) : node_(node), ws_(std::move(socket)) {}

    void start() {
        http::async_read(
            ws_.next_layer(), buffer_, request_,
            [self = shared_from_this()](error_code ec, std::size_t) { self->on_request(ec); });
    }

    void send(std::string frame) {
        if (!upgraded_) return;
        queue_.push_back(std::move(frame));
        if (!writing_) write_next();
    }

    void drop() {
        error_code ignored;
        beast::get_lowest_layer(ws_).socket().shutdown(tcp::socket::shutdown_both, ignored);
        beast::get_lowest_layer(ws_).close();
    }

    void close() {
        ws_.async_close(websocket::close_code::going_away,
                        [self = shared_from_this()](error_code) {});
    }

    // Recorded state, under the node's mutex.
    std::optional<std::string> authorization;
    std::vector<nlohmann::json> frames;
    bool open = false;

private:
    void on_request(error_code ec) {
        if (ec) return;
        if (const auto it = request_.find(http::field::authorization); it != request_.end()) {
            const std::lock_guard lock{node_.impl_mutex()};
            authorization = std::string{it->value()};
        }
        ws_.set_option(websocket::stream_base::timeout::suggested(beast::role_type::server));
        ws_.async_accept(request_, [self = shared_from_this()](error_code accept_ec) {
            self->on_accept(accept_ec);
        });
    }

    void on_accept(error_code ec) {
        if (ec) return;
        upgraded_ = true;
        ws_.text(true);
        {
            const std::lock_guard lock{node_.impl_mutex()};
            open = true;
        }
        read_next();
    }

    void read_next() {
        ws_.async_read(buffer_, [self = shared_from_this()](error_code ec, std::size_t) {
            self->on_read(ec);
        });
    }

    void on_read(error_code ec) {
        if (ec) {
            const std::lock_guard lock{node_.impl_mutex()};
            open = false;
            return;
        }
        const auto text = beast::buffers_to_string(buffer_.data());
        buffer_.consume(buffer_.size());
        auto frame = nlohmann::json::parse(text, nullptr, false);
        if (frame.is_discarded()) frame = text;
        const bool hello = frame.is_object() && frame.value("type", "") == "hello";
        {
            const std::lock_guard lock{node_.impl_mutex()};
            frames.push_back(std::move(frame));
        }
        if (hello) send(node_.welcome_frame());
        read_next();
    }

    void write_next() {
        writing_ = true;
        ws_.async_write(net::buffer(queue_.front()),
                        [self = shared_from_this()](error_code ec, std::size_t) {
                            self->writing_ = false;
                            if (ec) return;
                            self->queue_.pop_front();
                            if (!self->queue_.empty()) self->write_next();
                        });
    }

    FakeNode& node_;
    websocket::stream<beast::tcp_stream> ws_;
    beast::flat_buffer buffer_;
    http::request<http::string_body> request_;
    std::deque<std::string> queue_;
    bool upgraded_ = false;
    bool writing_ = false;
};

struct FakeNode::Impl {
    net::io_context ioc;
    tcp::acceptor acceptor{ioc, tcp::endpoint{net::ip::address_v4::loopback(), 0}};
    mutable std::mutex mutex;
    std::vector<std::shared_ptr<Session>> sessions;
    std::vector<protocol::NodeInfo> welcome_cluster;
    std::size_t welcome_batch_bytes = 0;
    std::thread thread;
};

std::mutex& FakeNode::impl_mutex() const { return impl_->mutex; }

FakeNode::FakeNode(std::string node_id)
    : node_id_(std::move(node_id)), impl_(std::make_unique<Impl>()) {
    impl_->welcome_cluster = {info()};
    accept_next();
    impl_->thread = std::thread([this] { impl_->ioc.run(); });
}

FakeNode::~FakeNode() {
    impl_->ioc.stop();
    impl_->thread.join();
    // No handler runs any more: cut the sockets here, before the io_context goes.
    for (const auto& session : impl_->sessions) session->drop();
    impl_->acceptor.close();
}

void FakeNode::accept_next() {
    impl_->acceptor.async_accept([this](error_code ec, tcp::socket socket) {
        if (ec) return;
        auto session = std::make_shared<Session>(*this, std::move(socket));
        {
            const std::lock_guard lock{impl_->mutex};
            impl_->sessions.push_back(session);
        }
        session->start();
        accept_next();
    });
}

std::string FakeNode::url() const {
    return "ws://127.0.0.1:" + std::to_string(impl_->acceptor.local_endpoint().port()) +
           "/v1/workers";
}

void FakeNode::set_welcome_cluster(std::vector<protocol::NodeInfo> nodes) {
    const std::lock_guard lock{impl_->mutex};
    impl_->welcome_cluster = std::move(nodes);
}

void FakeNode::set_welcome_batch(std::size_t max_frame_bytes) {
    const std::lock_guard lock{impl_->mutex};
    impl_->welcome_batch_bytes = max_frame_bytes;
}

std::string FakeNode::welcome_frame() const {
    const std::lock_guard lock{impl_->mutex};
    return protocol::encode(protocol::Welcome{
        node_id_, "session-" + std::to_string(impl_->sessions.size()), impl_->welcome_cluster,
        impl_->welcome_batch_bytes > 0, impl_->welcome_batch_bytes});
}

std::size_t FakeNode::session_count() const {
    const std::lock_guard lock{impl_->mutex};
    return impl_->sessions.size();
}

std::vector<nlohmann::json> FakeNode::frames(std::size_t session) const {
    const std::lock_guard lock{impl_->mutex};
    if (session >= impl_->sessions.size()) return {};
    return impl_->sessions[session]->frames;
}

std::vector<nlohmann::json> FakeNode::frames_of_type(std::size_t session,
                                                     std::string_view type) const {
    std::vector<nlohmann::json> out;
    for (auto& frame : frames(session)) {
        if (frame.is_object() && frame.value("type", "") == type) out.push_back(std::move(frame));
    }
    return out;
}

std::vector<int> FakeNode::credit_windows(std::size_t session) const {
    const std::lock_guard lock{impl_->mutex};
    std::vector<int> windows;
    if (session >= impl_->sessions.size()) return windows;
    for (const auto& frame : impl_->sessions[session]->frames) {
        if (!frame.is_object()) continue;
        const auto type = frame.find("type");
        if (type != frame.end() && (*type == "hello" || *type == "credit")) {
            windows.push_back(frame.at("max_in_flight").get<int>());
        }
    }
    return windows;
}

std::optional<std::string> FakeNode::authorization(std::size_t session) const {
    const std::lock_guard lock{impl_->mutex};
    if (session >= impl_->sessions.size()) return std::nullopt;
    return impl_->sessions[session]->authorization;
}

bool FakeNode::is_open(std::size_t session) const {
    const std::lock_guard lock{impl_->mutex};
    return session < impl_->sessions.size() && impl_->sessions[session]->open;
}

void FakeNode::send(std::size_t session, std::string frame) {
    net::post(impl_->ioc, [this, session, frame = std::move(frame)]() mutable {
        if (auto target = session_at(session)) target->send(std::move(frame));
    });
}

void FakeNode::drop(std::size_t session) {
    net::post(impl_->ioc, [this, session] {
        if (auto target = session_at(session)) target->drop();
    });
}

void FakeNode::close(std::size_t session) {
    net::post(impl_->ioc, [this, session] {
        if (auto target = session_at(session)) target->close();
    });
}

std::shared_ptr<FakeNode::Session> FakeNode::session_at(std::size_t session) const {
    const std::lock_guard lock{impl_->mutex};
    return session < impl_->sessions.size() ? impl_->sessions[session] : nullptr;
}

std::string task_frame(const std::string& task_id, const std::string& activity_type,
                       const std::string& input_json, int attempt) {
    protocol::Task task;
    task.task_id = task_id;
    task.dispatch_key = "wf-" + task_id + ":0";
    task.workflow_id = "wf-" + task_id;
    task.namespace_name = "default";
    task.task_queue = "default";
    task.activity_type = activity_type;
    task.input_json = input_json;
    task.attempt = attempt;
    task.timeout_ms = 30000;
    return protocol::encode(task);
}

}  // namespace outboxd::sdk::testing
