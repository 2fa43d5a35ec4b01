#pragma once

// The outboxd nodes of a chaos run. Each node reaches the database through proxies of its
// own, one per upstream (a PostgreSQL server, or PgBouncer), so that one node alone can be
// cut off; with several upstreams its URL lists them all (database_url), and libpq takes
// the one that accepts writes. Each node keeps its node id and HTTP port across restarts,
// so that workers find it again at the URL they know.
//
// Every exit is judged: the harness marks a node before it kills or stops it; any other
// exit is recorded as unexpected (with the end of its log) and the node is restarted so
// that the run goes on.
//
// Main thread only (children die with the thread that spawned them).

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "process.hpp"
#include "tcp_proxy.hpp"

namespace outboxd::chaos {

struct NodeExit {
    std::string node_id;
    std::int64_t at_ms = 0;  // unix time it was noticed
    int code = 0;            // exit code, 128+signal when killed
    std::string log_tail;
};

class NodeGroup {
public:
    // `upstream_ports`: where the database is, in the order the nodes' URL lists them. `env`
    // is every node's environment (timings, log level) apart from what this class sets:
    // database URL, listen address and node id. Nodes are named node-1 … node-`count`.
    NodeGroup(const std::vector<std::uint16_t>& upstream_ports, std::string bin_dir,
              std::string log_dir, std::map<std::string, std::string> env, int count);
    ~NodeGroup();
    NodeGroup(const NodeGroup&) = delete;
    NodeGroup& operator=(const NodeGroup&) = delete;

    // Starts every node and waits until each serves /readyz. Throws when one does not.
    void start_all();
    [[nodiscard]] std::size_t size() const { return nodes_.size(); }
    [[nodiscard]] const std::string& id(std::size_t i) const { return nodes_[i].id; }
    [[nodiscard]] std::uint16_t http_port(std::size_t i) const { return nodes_[i].port; }
    [[nodiscard]] std::vector<std::string> worker_urls() const;

    void kill(std::size_t i);     // SIGKILL, expected; the node stays down until restart()
    void restart(std::size_t i);  // same id, same port; returns once it listens
    void pause(std::size_t i);    // SIGSTOP
    void resume(std::size_t i);   // SIGCONT
    void cut(std::size_t i);      // partition from PostgreSQL
    void restore(std::size_t i);
    // Whether upstream `u` is up. A proxy to one that is down refuses connections: libpq
    // tries the next host of a URL when a connection is refused, but gives up on all of them
    // when one is accepted and then closed, as a proxy does when its server is gone.
    void set_upstream_up(std::size_t u, bool up);

    // Reaps nodes that exited. Unexpected exits are recorded and the node restarted.
    void poll();
    // SIGTERM to every node; a node that does not exit 0 within `timeout` is recorded as an
    // unexpected exit (a crash or hang on shutdown).
    void stop_all(std::chrono::milliseconds timeout);

    [[nodiscard]] const std::vector<NodeExit>& unexpected_exits() const { return unexpected_; }
    [[nodiscard]] int expected_exits() const { return expected_; }

private:
    struct Node {
        std::string id;
        std::uint16_t port = 0;
        std::vector<std::unique_ptr<test::TcpProxy>> proxies;  // one per upstream
        std::vector<bool> proxy_open;
        std::unique_ptr<test::Process> process;
        std::string log_path;
        int generation = 0;
        bool paused = false;
        bool partitioned = false;
    };

    // Opens each proxy of `node` that should be (its upstream up, the node not cut off) and
    // cuts the others.
    void apply_routes(Node& node);
    void launch(Node& node);
    void await_listening(Node& node);
    void record_unexpected(const Node& node, int code);

    std::vector<bool> upstream_up_;
    std::string bin_dir_;
    std::string log_dir_;
    std::map<std::string, std::string> env_;
    std::vector<Node> nodes_;
    std::vector<NodeExit> unexpected_;
    int expected_ = 0;
};

}  // namespace outboxd::chaos
