#pragma once

// What a worker does when a node tells it the cluster's live nodes (welcome, cluster frames):
// which nodes to connect to and which connections to give up.

#include <optional>
#include <string>
#include <vector>

#include "outboxd/worker/protocol.hpp"

namespace outboxd::sdk::detail {

// A node URL the client currently keeps a link to.
struct KnownNode {
    std::string url;
    std::optional<std::string> node_id;  // once its welcome arrived
    bool seed = false;
    bool connected = false;  // upgraded and not lost since
};

struct ClusterPlan {
    std::vector<worker::protocol::NodeInfo> connect;  // listed, not known yet
    std::vector<std::string> drop;                    // URLs of known non-seeds no longer listed
};

// A listed node counts as known when a link has its URL or, because a seed URL may name a
// node differently from the URL it advertises, its node id while that link is connected.
// A link known only by the node's id that is not connected is stale (the node restarted
// elsewhere, on another port): the listed URL is connected to, and the stale link dropped
// unless it is a seed. Seeds are never dropped. An empty list says nothing (a live node always
// lists itself) and changes nothing.
[[nodiscard]] ClusterPlan plan_cluster(const std::vector<KnownNode>& known,
                                       const std::vector<worker::protocol::NodeInfo>& listed);

}  // namespace outboxd::sdk::detail
