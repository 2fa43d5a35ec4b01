#pragma once

// Worker SDK: connects a process's activity handlers to an outboxd cluster over the
// worker WebSocket protocol (README, "Worker protocol").
//
// Given one seed URL, the client connects to every live node it learns of from `welcome`
// and `cluster` frames, splits its credit window over those connections, reconnects with
// backoff, and answers every task exactly once.
//
// Threading: the client runs its own network thread. Handlers are called on that thread and
// must not block: hand blocking work to your own threads and answer through the Responder,
// which may be used from any thread.

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "outboxd/worker/protocol.hpp"

namespace outboxd::sdk {

struct WorkerOptions {
    std::vector<std::string> seed_urls;  // e.g. ws://127.0.0.1:8080/v1/workers, or wss://…
    std::string worker_id;
    std::vector<std::string> namespaces{"default"};
    std::string task_queue = "default";
    std::optional<std::string> node;  // this worker's node label
    std::vector<std::string> activity_types;
    // Total over all node connections: the tasks the client holds plus the credit it still
    // offers never exceed it (only with more connections than that does each get 1). A node
    // learned while the others hold the whole window gets its hello as their tasks come back;
    // a lowered credit counts at its old value until its node must have read it.
    std::int32_t max_in_flight = 16;
    std::optional<std::string> token;  // sent as Authorization: Bearer
    // PEM CA certificates that wss:// nodes' certificates must chain to; unset: the
    // system's trust store. A node's certificate must also name the host of its URL.
    std::optional<std::string> ca_file;
    bool follow_cluster = true;  // also connect to nodes named in welcome/cluster
    std::chrono::milliseconds reconnect_min{100};
    std::chrono::milliseconds reconnect_max{5000};
    std::size_t max_frame_bytes = 1 << 20;
    // Extensions. Beast's suggested client timeouts have no idle timeout, so a node that
    // vanishes without a FIN would never be noticed: the SDK pings after idle_timeout / 2 of
    // silence and drops the connection after idle_timeout (0 disables).
    std::chrono::milliseconds connect_timeout{5000};  // TCP connect, from the start of DNS
    std::chrono::milliseconds idle_timeout{30000};
    std::chrono::milliseconds close_timeout{1000};  // stop(): longest wait for a close handshake
    // Every rebalance_interval the credit window is re-split towards the nodes that keep the
    // credit they are given filled (a backlog), away from idle ones; every connection keeps
    // at least 1 credit, and a new one starts at an even share (once the window has room).
    // 0: always the even split.
    std::chrono::milliseconds rebalance_interval{500};
    // Ask nodes for batch frames and send answers as batch frames where the node reads them
    // (several frames that are ready at once leave in one write); false: one frame each.
    bool batch_frames = true;
};

class WorkerClient;

// The answer to one task. Move-only; answer once with complete or fail. A Responder
// destroyed without an answer fails the task as retryable ("abandoned by worker"), so no
// task is ever left silently unanswered. Thread-safe.
class Responder {
public:
    Responder(Responder&&) noexcept;
    Responder& operator=(Responder&&) noexcept;
    Responder(const Responder&) = delete;
    Responder& operator=(const Responder&) = delete;
    ~Responder();

    // `result_json` travels verbatim and must be valid JSON; a result that is not fails the
    // task as non-retryable instead (the node could not parse the frame). Calls after the
    // first answer are ignored.
    void complete(std::string result_json = "null");
    void fail(std::string error, bool retryable = true);
    // Keeps a long task alive (README, "Task policy and heartbeats"): send one well within
    // the task's heartbeat_timeout_ms. `progress_json`, when given, must be valid JSON of at
    // most worker::protocol::kMaxProgressBytes; a heartbeat with progress that is not is
    // sent without it (and logged). Ignored once answered.
    void heartbeat(std::optional<std::string> progress_json = std::nullopt);
    // Whether the node cancelled the task (its workflow was cancelled, or it is no longer
    // outstanding): stop, and answer as you like (the answer changes nothing).
    [[nodiscard]] bool cancelled() const;

    class State;  // shared with the client
    explicit Responder(std::shared_ptr<State> state);

private:
    std::shared_ptr<State> state_;
};

// One task, as a handler gets it: the fields of the task frame (README, "Worker protocol"),
// `database` the outbox database the task's row is in ("default" on a node with one
// database, and from nodes too old to name it).
using Task = worker::protocol::Task;

using TaskHandler = std::function<void(const Task&, Responder)>;

struct WorkerStats {
    std::size_t connected_nodes = 0;
    std::uint64_t tasks_received = 0;
    std::uint64_t tasks_completed = 0;
    std::uint64_t tasks_failed = 0;
    std::uint64_t tasks_in_flight = 0;
    std::uint64_t errors_received = 0;  // error frames from nodes
    // Extensions.
    std::uint64_t answers_dropped = 0;  // answers whose connection was gone (node re-arms)
    std::uint64_t frames_invalid = 0;   // frames from nodes that did not parse
    std::uint64_t reconnects = 0;       // connection attempts after the first one per node
    std::uint64_t tasks_cancelled = 0;  // cancel frames for tasks in flight
};

class WorkerClient {
public:
    // Throws std::invalid_argument naming the option when the options cannot work (no seed URL,
    // a URL that is not ws://host[:port]/path, empty worker_id or activity_types,
    // max_in_flight outside 1..kMaxCreditWindow).
    WorkerClient(WorkerOptions options, TaskHandler handler);
    ~WorkerClient();  // stop(0) if still running; not from a handler
    WorkerClient(const WorkerClient&) = delete;
    WorkerClient& operator=(const WorkerClient&) = delete;

    // Starts the network thread and connects. Returns at once. A client starts at most once.
    void start();
    // Stops taking tasks (credit 0 on every connection), gives in-flight tasks up to `grace`
    // to be answered, fails the rest explicitly as retryable ("worker stopping"), closes
    // every connection and joins the network thread. Idempotent. Must not be called from a
    // handler (the network thread cannot join itself): from there it only begins the stop.
    void stop(std::chrono::milliseconds grace);

    [[nodiscard]] WorkerStats stats() const;
    // URLs of the nodes this client is connected to right now.
    [[nodiscard]] std::vector<std::string> connected_urls() const;

private:
    class Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace outboxd::sdk
