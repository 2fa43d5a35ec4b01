#pragma once

// A scripted stand-in for an outboxd node in SDK tests: a WebSocket server on 127.0.0.1 (any
// free port) that records what each worker session sends and lets the test speak for the
// node. It answers every hello with a welcome. Runs its own network thread; every method is
// thread-safe. Sessions are numbered from 0 in the order they were accepted.

#include <chrono>
#include <cstddef>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "outboxd/worker/protocol.hpp"

namespace outboxd::sdk::testing {

class FakeNode {
public:
    explicit FakeNode(std::string node_id = "node-a");
    // Cuts every session at once, as a crashing node would.
    ~FakeNode();
    FakeNode(const FakeNode&) = delete;
    FakeNode& operator=(const FakeNode&) = delete;

    [[nodiscard]] std::string url() const;
    [[nodiscard]] const std::string& node_id() const { return node_id_; }
    [[nodiscard]] worker::protocol::NodeInfo info() const { return {node_id_, url(), {}, {}}; }

    // The cluster list of the welcome that answers each hello (default: this node alone).
    void set_welcome_cluster(std::vector<worker::protocol::NodeInfo> nodes);
    // Welcomes that say the node reads batch frames of up to `max_frame_bytes` (default: no).
    void set_welcome_batch(std::size_t max_frame_bytes);

    [[nodiscard]] std::size_t session_count() const;
    [[nodiscard]] std::vector<nlohmann::json> frames(std::size_t session) const;
    [[nodiscard]] std::vector<nlohmann::json> frames_of_type(std::size_t session,
                                                             std::string_view type) const;
    // The credit windows the worker announced on the session, in order: its hello's
    // max_in_flight, then each credit frame's. Cheaper than frames() on a busy session.
    [[nodiscard]] std::vector<int> credit_windows(std::size_t session) const;
    // The Authorization header of the session's upgrade request, if it had one.
    [[nodiscard]] std::optional<std::string> authorization(std::size_t session) const;
    // Upgraded and neither side has closed yet.
    [[nodiscard]] bool is_open(std::size_t session) const;

    void send(std::size_t session, std::string frame);
    void drop(std::size_t session);   // TCP cut, no close handshake
    void close(std::size_t session);  // WebSocket close handshake

    class Session;

private:
    void accept_next();
    [[nodiscard]] std::mutex& impl_mutex() const;
    [[nodiscard]] std::string welcome_frame() const;
    [[nodiscard]] std::shared_ptr<Session> session_at(std::size_t session) const;

    struct Impl;
    const std::string node_id_;
    std::unique_ptr<Impl> impl_;
};

// Polls `predicate` every few milliseconds until it holds or `timeout` passes.
template <class Predicate>
bool eventually(Predicate predicate, std::chrono::milliseconds timeout = std::chrono::seconds{5}) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (!predicate()) {
        if (std::chrono::steady_clock::now() >= deadline) return false;
        std::this_thread::sleep_for(std::chrono::milliseconds{5});
    }
    return true;
}

// A task frame as a node would send it.
[[nodiscard]] std::string task_frame(const std::string& task_id, const std::string& activity_type,
                                     const std::string& input_json = "null", int attempt = 1);

}  // namespace outboxd::sdk::testing
