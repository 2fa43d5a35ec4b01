#pragma once

// The machinery behind WorkerClient: one network thread running an io_context that owns
// every connection, the cluster view, the credit split and the tasks in flight.
//
// Threading: start, stop, stats, connected_urls and post_answer may be called from any
// thread; everything else runs on the network thread, so the state below needs no lock
// except the published statistics. Shared (not unique) ownership only so that a Responder
// can hold a weak_ptr and outlive the client safely.

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/steady_timer.hpp>

#include "credit_ledger.hpp"
#include "node_connection.hpp"
#include "node_link.hpp"
#include "outboxd/sdk/worker_client.hpp"

namespace outboxd::sdk::detail {

enum class Outcome { completed, failed };

// The TLS settings every wss:// connection of a client verifies its node with: PEM CA
// certificates from `ca_file`, or the system's trust store. Throws std::invalid_argument
// naming a file that cannot be loaded.
[[nodiscard]] std::unique_ptr<boost::asio::ssl::context> make_tls_client_context(
    const std::optional<std::string>& ca_file);

class ClientCore final : public std::enable_shared_from_this<ClientCore> {
public:
    // `options` must have been validated (see WorkerClient).
    ClientCore(WorkerOptions options, TaskHandler handler);
    ~ClientCore();
    ClientCore(const ClientCore&) = delete;
    ClientCore& operator=(const ClientCore&) = delete;

    void start();
    void stop(std::chrono::milliseconds grace);
    [[nodiscard]] WorkerStats stats() const;
    [[nodiscard]] std::vector<std::string> connected_urls() const;

    // Hands an answer, already claimed through `state`, to the network thread.
    void post_answer(std::shared_ptr<Responder::State> state, std::string frame, Outcome outcome);
    // A frame about a task that does not answer it (a heartbeat): sent on the task's
    // connection while the task is in flight there.
    void post_frame(std::shared_ptr<Responder::State> state, std::string frame);

private:
    // Links and connections.
    NodeLink* add_link(const std::string& url, bool seed);
    void remove_link(const std::string& url);
    [[nodiscard]] NodeLink* find_link(std::string_view url);
    [[nodiscard]] NodeLink* link_of(std::uint64_t connection_id);
    void connect(NodeLink& link);
    void schedule_reconnect(NodeLink& link);
    void send(const NodeLink& link, std::string frame);

    // Connection events.
    void on_opened(std::uint64_t connection_id);
    void on_received(std::uint64_t connection_id, std::string_view text);
    void on_closed(std::uint64_t connection_id, const boost::system::error_code& ec);

    // Frames from nodes.
    void on_welcome(NodeLink& link, const worker::protocol::Welcome& welcome);
    void on_task(NodeLink& link, const Task& task);
    void on_cluster(const std::vector<worker::protocol::NodeInfo>& nodes);
    void on_drain(NodeLink& link);
    void on_error(const NodeLink& link, const worker::protocol::Error& error);

    // Credit (credit_ledger.hpp): connection events go to the ledger, and what it decides is
    // sent; every rebalance_interval it measures each connection's demand and re-splits.
    [[nodiscard]] bool rebalancing() const { return options_.rebalance_interval.count() > 0; }
    void schedule_rebalance();
    void apply_credit(const CreditLedger::Frames& frames);
    void arm_settle();
    void deliver_answer(const Responder::State& state, std::string frame, Outcome outcome);
    void on_cancel(NodeLink& link, const worker::protocol::Cancel& cancel);

    // Stop sequence: begin (credit 0, grace) -> finish (fail the rest) -> close once the
    // answers already given are written -> every connection closed (or close_timeout) ->
    // the io_context stops and the network thread ends.
    void begin_stop(std::chrono::milliseconds grace);
    void finish_stop();
    void close_when_settled();

    [[nodiscard]] std::size_t in_flight_count() const;
    void publish();  // refreshes the connection and in-flight figures others read
    template <class Update>
    void count(Update update) {
        const std::lock_guard lock{published_mutex_};
        update(stats_);
    }

    const WorkerOptions options_;
    const TaskHandler handler_;
    const NodeConnection::Settings connection_settings_;
    // Verifies wss:// nodes (options_.ca_file, else the system's trust store). Declared
    // before the io_context so that connections, which use it, go first.
    std::unique_ptr<boost::asio::ssl::context> tls_;
    const bool tls_seeded_;  // some seed is wss://: learned nodes must be too

    mutable std::mutex published_mutex_;
    WorkerStats stats_;
    std::vector<std::string> connected_urls_;

    std::mutex lifecycle_mutex_;  // serialises start and stop
    bool started_ = false;
    bool stop_requested_ = false;
    std::thread thread_;

    // Declared before the I/O objects below so that it is destroyed after them.
    boost::asio::io_context ioc_;
    std::optional<boost::asio::executor_work_guard<boost::asio::io_context::executor_type>> work_;
    std::vector<std::unique_ptr<NodeLink>> links_;  // seeds first, then in order learned
    std::map<std::uint64_t, std::shared_ptr<NodeConnection>> connections_;  // every live one
    std::uint64_t next_connection_id_ = 0;
    boost::asio::steady_timer grace_timer_;
    boost::asio::steady_timer close_deadline_;
    boost::asio::steady_timer rebalance_timer_;
    CreditLedger ledger_;  // keyed by connection id
    boost::asio::steady_timer settle_timer_;
    std::optional<CreditLedger::Clock::time_point> settle_at_;  // what settle_timer_ waits for
    bool stopping_ = false;
    bool stop_finished_ = false;
};

}  // namespace outboxd::sdk::detail
