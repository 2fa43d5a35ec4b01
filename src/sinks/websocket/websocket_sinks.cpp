#include "outboxd/sinks/websocket/websocket_sinks.hpp"

#include <cstdio>
#include <random>
#include <string>

#include <spdlog/spdlog.h>

#include "hub.hpp"
#include "outboxd/util/untrusted_text.hpp"
#include "outboxd/worker/protocol.hpp"
#include "worker_session.hpp"

namespace outboxd::sinks {

namespace websocket {

std::string new_session_id() {
    static thread_local std::mt19937_64 random{std::random_device{}()};
    char buffer[17];
    std::snprintf(buffer, sizeof buffer, "%016llx", static_cast<unsigned long long>(random()));
    return buffer;
}

SinkProfile profile_of(const worker::protocol::Hello& hello) {
    SinkProfile profile;
    profile.name = hello.worker_id;
    profile.namespaces = hello.namespaces;
    profile.task_queue = hello.task_queue;
    profile.node = hello.node;
    profile.activity_types = hello.activity_types;
    profile.credit = hello.max_in_flight;
    return profile;
}

}  // namespace websocket

void WebSocketSinks::Hub::upgrade(http::PlainStream stream, http::UpgradeRequest request,
                                  std::unique_ptr<http::ConnectionSlot> slot,
                                  std::shared_ptr<const auth::Grant> grant) {
    std::make_shared<websocket::WorkerSession<http::PlainStream>>(
        std::move(stream), std::move(slot), nullptr, std::move(grant), *this)
        ->run(std::move(request));
}

void WebSocketSinks::Hub::upgrade(http::TlsStream stream, http::UpgradeRequest request,
                                  std::unique_ptr<http::ConnectionSlot> slot,
                                  std::shared_ptr<boost::asio::ssl::context> tls,
                                  std::shared_ptr<const auth::Grant> grant) {
    std::make_shared<websocket::WorkerSession<http::TlsStream>>(
        std::move(stream), std::move(slot), std::move(tls), std::move(grant), *this)
        ->run(std::move(request));
}

void WebSocketSinks::Hub::fault(std::string_view what) {
    metrics.fault("websocket").Increment();
    spdlog::error("event=fault where=websocket error=\"{}\"", util::log_safe(what));
}

WebSocketSinks::WebSocketSinks(const WebSocketSettings& settings, SinkPort& port,
                               metrics::NodeMetrics& metrics, std::function<ClusterInfo()> cluster)
    : hub_(std::make_unique<Hub>(settings, port, metrics, std::move(cluster))) {
    // Every code's series from the start: a dashboard shows a healthy node's zeros.
    for (const auto code : worker::protocol::code::kAll) {
        metrics.protocol_errors_total.Add({{"code", std::string{code}}});
    }
}

WebSocketSinks::~WebSocketSinks() = default;

http::UpgradeHandler& WebSocketSinks::upgrades() { return *hub_; }

void WebSocketSinks::drain() {
    const std::string frame = worker::protocol::encode(worker::protocol::Drain{});
    // Over a copy: a session may end while it is sent to, and leave the map.
    const auto sessions = hub_->sessions;
    for (const auto& [id, weak] : sessions) {
        if (auto session = weak.lock()) session->send(frame);
    }
}

void WebSocketSinks::cluster_changed() {
    const worker::protocol::Cluster cluster{hub_->cluster().nodes};
    const std::string frame = worker::protocol::encode(cluster);
    const auto sessions = hub_->sessions;  // as in drain()
    for (const auto& [id, weak] : sessions) {
        if (auto session = weak.lock(); session && session->greeted()) session->send(frame);
    }
}

void WebSocketSinks::revalidate(const std::function<bool(const auth::Grant&)>& still_valid) {
    const auto sessions = hub_->sessions;  // as in drain()
    for (const auto& [id, weak] : sessions) {
        const auto session = weak.lock();
        if (!session || still_valid(session->grant())) continue;
        spdlog::info("event=worker_credential_revoked session={} credential={}", id,
                     util::log_safe(session->grant().credential_id));
        session->end(worker::protocol::code::kUnauthorized,
                     "the credential was revoked or has expired");
    }
}

void WebSocketSinks::stop() {
    auto sessions = hub_->sessions;
    for (auto& [id, weak] : sessions) {
        if (auto session = weak.lock()) session->close("node shutting down");
    }
}

}  // namespace outboxd::sinks
