#pragma once

// How a kind of sink is wired into a node: the node holds one SinkProvider per kind (its
// provider list, app/node.cpp) and tells each when the node starts, drains, sees the cluster
// change and stops. A kind whose state lives in each database (HTTP push targets are rows of
// that database) makes an EngineSinks for every engine. Adding a kind is a provider and its
// own files: nothing else in the node names it.
//
// Thread affinity: the node's loop thread.

#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include <boost/asio/any_io_executor.hpp>

#include "outboxd/metrics/node_metrics.hpp"
#include "outboxd/sinks/sink_port.hpp"
#include "outboxd/store/lanes.hpp"

namespace outboxd::sinks {

// Shards owned per node (by incarnation), as one database's cluster last looked.
using ShardCounts = std::map<std::string, std::int64_t>;

// What a kind's per-database state may use of its database's engine.
struct EngineView {
    std::string database;  // its name
    boost::asio::any_io_executor loop;
    store::AdminLane& admin_lane;  // the database's settings (targets, …) are read here
    SinkPort& port;
    metrics::NodeMetrics& metrics;
};

// A kind's state in one database; the engine starts and stops it with itself.
class EngineSinks {
public:
    virtual ~EngineSinks() = default;
    virtual void start() = 0;
    // Closes its sinks; what they hold ends as retried failures.
    virtual void stop() = 0;
    // The database's cluster changed: the shards owned per node, `me` this node's
    // incarnation.
    virtual void cluster_changed(const ShardCounts& owned, const std::string& me) {
        (void)owned;
        (void)me;
    }
};

class SinkProvider {
public:
    virtual ~SinkProvider() = default;
    // This kind's state in a database, if it keeps any there.
    [[nodiscard]] virtual std::unique_ptr<EngineSinks> for_engine(const EngineView& engine) {
        (void)engine;
        return nullptr;
    }
    // The node drains: its sinks are told to stop taking work, if they can be.
    virtual void drain() {}
    // The cluster's live nodes changed.
    virtual void cluster_changed() {}
    // The node stops: every sink of the kind is closed.
    virtual void stop() {}
};

}  // namespace outboxd::sinks
