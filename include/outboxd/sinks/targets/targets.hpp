#pragma once

// The targets of one database on one node, of every kind (README, "Targets"): a sink kind's
// state in that database (TargetSinks, target_sinks.hpp, makes one per engine). Reads the targets
// from PostgreSQL every refresh interval (the namespace cache TTL) and attaches each valid one
// through the SinkPort as a sink of its route, whose credit is this node's share of the
// target's max_in_flight: floor(max_in_flight × owned shards / 1024), at least 1 while the
// node owns any shard. So the claim path treats a target like a WebSocket worker: a row is
// claimed only when its target has a free slot here, and a slow or dead target holds back
// only its own route.
//
// The shares follow the cluster as this node sees it (set_cluster); while shards move
// between nodes, nodes may see it differently for a heartbeat, and a node whose share
// shrank lets its requests out finish: the bound can be passed by those for that long.
//
// A changed target is taken over by a new sink; the old one takes no new tasks and detaches
// once its requests have ended. What each target did since the last refresh
// (its latest error, a success) is written back on the next refresh.
//
// Thread affinity: the node's loop; SQL runs on the lane given.

#include <chrono>
#include <cstdint>
#include <ctime>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/steady_timer.hpp>

#include "outboxd/config/defaults.hpp"
#include "outboxd/metrics/node_metrics.hpp"
#include "outboxd/sinks/sink_port.hpp"
#include "outboxd/sinks/sink_provider.hpp"
#include "outboxd/sinks/targets/destination.hpp"
#include "outboxd/store/lanes.hpp"
#include "outboxd/store/target.hpp"
#include "outboxd/util/failure_run.hpp"
#include "outboxd/util/lifetime.hpp"

namespace outboxd::sinks::targets {

struct TargetsSettings {
    HostPolicy policy;
    std::chrono::milliseconds refresh{1000};
    std::size_t max_response_bytes = defaults::kHttpMaxResponseBytes;
    std::size_t max_result_bytes = defaults::kMaxResultBytes;  // a 2xx JSON body kept as result
    // The in-flight table's deadline passes the request's own timeout by this much, so that
    // the request's timeout, with its clearer error, always comes first.
    std::chrono::milliseconds deadline_grace{1000};
    // The database whose targets these are: they take its tasks only.
    std::optional<std::string> database;
};

// This node's view of one target.
struct TargetState {
    std::int32_t share = 0;                 // this node's part of max_in_flight
    std::int32_t in_flight = 0;             // tasks out now (requests, unconfirmed messages)
    bool connected = false;                 // holds a working connection (HTTP: served)
    std::optional<std::string> last_error;  // this node's latest failure
    std::optional<std::string> refused;     // why this node does not use the stored target
};

using TargetStates = std::map<std::string, TargetState>;  // by target name

using ShardCounts = sinks::ShardCounts;

// This node's (`me`) part of a target's max_in_flight: the largest-remainder apportionment
// of max_in_flight × (shards owned by someone) / `total` over the nodes by the shards they
// own, ties to the lower incarnation, so that nodes seeing the same cluster share out
// exactly the bound. At least 1 while `me` owns any shard, since its rows would otherwise
// never be delivered: with fewer max_in_flight than nodes, the bound is one per node.
[[nodiscard]] std::int32_t node_share(std::int32_t max_in_flight, const ShardCounts& owned,
                                      const std::string& me, std::int64_t total = 1024);

class Targets final : public sinks::EngineSinks {
public:
    using WallClock = std::function<std::time_t()>;

    Targets(
        boost::asio::any_io_executor loop, store::AdminLane& lane, sinks::SinkPort& port,
        metrics::NodeMetrics& metrics, TargetsSettings settings,
        WallClock wall_clock = [] { return std::time(nullptr); });
    ~Targets() override;
    Targets(const Targets&) = delete;
    Targets& operator=(const Targets&) = delete;

    void start() override;  // the first refresh now, then every settings.refresh
    void stop() override;   // closes every target; its requests end as retried failures
    void refresh_now();
    // Shards owned per node (`me`: this node's incarnation) changed.
    void cluster_changed(const ShardCounts& owned, const std::string& me) override;

    [[nodiscard]] const HostPolicy& policy() const { return settings_.policy; }
    [[nodiscard]] std::optional<TargetState> state(const std::string& name) const;
    // Every target this node knows of: served, or refused with the reason.
    [[nodiscard]] TargetStates states() const;

private:
    struct Entry {
        std::string session_id;
        std::shared_ptr<Channel> channel;
        bool ready = true;  // the channel can take tasks (its credit is its share)
        store::TargetSettings settings;
    };

    void schedule();
    void apply(const std::vector<store::TargetRecord>& records);
    void add(const store::TargetSettings& target);
    void retire(Entry entry);
    void set_credit(const Entry& entry);
    void reap_retired();
    [[nodiscard]] std::vector<store::TargetReport> take_reports();

    boost::asio::any_io_executor loop_;
    store::AdminLane& lane_;
    sinks::SinkPort& port_;
    metrics::NodeMetrics& metrics_;
    // The database's name, in its log lines and metric labels.
    [[nodiscard]] std::string database() const { return settings_.database.value_or("default"); }
    TargetsSettings settings_;
    WallClock wall_clock_;
    [[nodiscard]] std::int32_t share_of(const store::TargetSettings& target) const;

    ShardCounts owned_;
    std::string me_;
    std::uint64_t generation_ = 0;
    std::map<std::string, Entry> active_;         // by target name
    std::vector<Entry> retired_;                  // draining: no new tasks, leave when idle
    std::map<std::string, std::string> refused_;  // target name -> why it is not used
    std::vector<store::TargetReport> unsent_reports_;
    util::FailureRun failures_;
    boost::asio::steady_timer timer_;
    bool stopped_ = true;
    util::Lifetime lifetime_;
};

}  // namespace outboxd::sinks::targets
