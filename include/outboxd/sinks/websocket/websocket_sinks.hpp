#pragma once

// The WebSocket workers of a node (README, "Worker protocol"): a sink kind. The HTTP server
// hands it every upgraded connection of /v1/workers (upgrades()); each connection is a
// WorkerSession that speaks the protocol, turns a hello into a SinkProfile and attaches
// through the SinkPort, and turns the answers into the port's calls. As a provider it tells
// its workers when the node drains and when the cluster changes, and closes them when the
// node stops.
//
// Thread affinity: the loop thread. Beast stays behind this header.

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "outboxd/auth/grant.hpp"
#include "outboxd/config/defaults.hpp"
#include "outboxd/metrics/node_metrics.hpp"
#include "outboxd/sinks/sink_port.hpp"
#include "outboxd/sinks/sink_provider.hpp"
#include "outboxd/worker/protocol.hpp"

namespace outboxd::http {
class UpgradeHandler;
}

namespace outboxd::sinks {

struct WebSocketSettings {
    std::size_t max_frame_bytes = defaults::kMaxFrameBytes;
    std::size_t max_result_bytes = defaults::kMaxResultBytes;  // complete.result, compact JSON
    std::size_t max_write_queue = defaults::kMaxWriteQueue;    // frames per connection
    std::size_t max_write_queue_bytes = defaults::kMaxWriteQueueBytes;  // bytes per connection
    std::chrono::seconds idle_timeout{20};                              // pings at half of it
    std::chrono::milliseconds hello_timeout{10000};  // from the upgrade to the hello
};

// What a welcome and a cluster frame tell a worker of the cluster.
struct ClusterInfo {
    std::string node_id;
    std::string advertise_url;
    // The live nodes that are not draining, with their databases and shards.
    std::vector<worker::protocol::NodeInfo> nodes;
};

class WebSocketSinks final : public SinkProvider {
public:
    WebSocketSinks(const WebSocketSettings& settings, SinkPort& port, metrics::NodeMetrics& metrics,
                   std::function<ClusterInfo()> cluster);
    ~WebSocketSinks() override;
    WebSocketSinks(const WebSocketSinks&) = delete;
    WebSocketSinks& operator=(const WebSocketSinks&) = delete;

    // For the HTTP server: where upgraded connections of /v1/workers go.
    [[nodiscard]] http::UpgradeHandler& upgrades();

    // SinkProvider: a drain frame to every worker; a cluster frame to every greeted
    // worker; every connection closed.
    void drain() override;
    void cluster_changed() override;
    void stop() override;

    // Ends every session whose credential `still_valid` no longer admits (deleted,
    // expired), with an `unauthorized` error frame.
    void revalidate(const std::function<bool(const auth::Grant&)>& still_valid);

    class Hub;

private:
    std::unique_ptr<Hub> hub_;
};

}  // namespace outboxd::sinks
