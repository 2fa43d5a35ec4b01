#include "cluster_plan.hpp"

#include <algorithm>

namespace outboxd::sdk::detail {

ClusterPlan plan_cluster(const std::vector<KnownNode>& known,
                         const std::vector<worker::protocol::NodeInfo>& listed) {
    if (listed.empty()) return {};
    // The same node under another URL, reached right now.
    const auto same_node = [](const KnownNode& node, const worker::protocol::NodeInfo& info) {
        return info.url == node.url ||
               (node.connected && node.node_id && info.node_id == *node.node_id);
    };
    const auto is_listed = [&](const KnownNode& node) {
        return std::any_of(listed.begin(), listed.end(),
                           [&](const auto& info) { return same_node(node, info); });
    };
    const auto is_known = [&](const worker::protocol::NodeInfo& info) {
        return std::any_of(known.begin(), known.end(),
                           [&](const KnownNode& node) { return same_node(node, info); });
    };

    ClusterPlan plan;
    for (const auto& info : listed) {
        const bool planned =
            std::any_of(plan.connect.begin(), plan.connect.end(),
                        [&info](const auto& other) { return other.url == info.url; });
        if (!planned && !is_known(info)) plan.connect.push_back(info);
    }
    for (const auto& node : known) {
        if (!node.seed && !is_listed(node)) plan.drop.push_back(node.url);
    }
    return plan;
}

}  // namespace outboxd::sdk::detail
