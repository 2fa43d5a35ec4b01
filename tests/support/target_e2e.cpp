#include "target_e2e.hpp"

#include <algorithm>

#include <catch2/catch.hpp>

namespace outboxd::test {

using namespace std::chrono_literals;

std::map<std::string, std::string> target_env(const std::map<std::string, std::string>& extra) {
    std::map<std::string, std::string> env{{"OUTBOXD_BACKOFF_BASE_MS", "50"},
                                           {"OUTBOXD_BACKOFF_MAX_MS", "300"},
                                           {"OUTBOXD_QUOTA_CACHE_TTL_MS", "200"},
                                           {"OUTBOXD_POLL_INTERVAL_MS", "100"},
                                           {"OUTBOXD_HTTP_ALLOWED_HOSTS", "127.0.0.1"}};
    for (const auto& [key, value] : extra) env[key] = value;
    return env;
}

nlohmann::json get_target(const NodeHandle& node, const std::string& name) {
    return nlohmann::json::parse(http_call(node.port, "GET", "/v1/targets/" + name).body);
}

void put_connected(const NodeHandle& node, const std::string& name, const nlohmann::json& body) {
    const auto put = http_call(node.port, "PUT", "/v1/targets/" + name, body.dump());
    INFO(put.body);
    REQUIRE(put.status == 200);
    REQUIRE(E2eCluster::await([&] { return get_target(node, name)["node"]["connected"] == true; },
                              15s));
}

nlohmann::json await_refused(const NodeHandle& node, const std::string& name) {
    nlohmann::json shown;
    const auto refused = E2eCluster::await(
        [&] {
            shown = get_target(node, name);
            return shown["node"]["connected"] == false && !shown["node"]["last_error"].is_null();
        },
        20s);
    INFO(shown.dump());
    REQUIRE(refused);
    return shown;
}

std::vector<NodeHandle*> three_nodes_serving(E2eCluster& cluster,
                                             const std::map<std::string, std::string>& env,
                                             const std::string& name, const nlohmann::json& body,
                                             int share) {
    std::vector<NodeHandle*> nodes;
    for (const auto* id : {"node-1", "node-2", "node-3"})
        nodes.push_back(&cluster.start_node(id, env));
    REQUIRE(E2eCluster::await([&] { return balanced_over(*nodes.front(), 3); }, 20s));
    REQUIRE(http_call(nodes.front()->port, "PUT", "/v1/targets/" + name, body.dump()).status ==
            200);
    for (auto* node : nodes) {
        REQUIRE(E2eCluster::await(
            [&] {
                const auto shown = get_target(*node, name);
                return shown["node"]["share"] == share && shown["node"]["connected"] == true;
            },
            20s));
    }
    return nodes;
}

int busiest_in_flight(E2eCluster& cluster, const std::string& kind, const std::string& name,
                      int share, std::int64_t done) {
    const auto series = R"(outboxd_target_inflight{database="default",kind=")" + kind +
                        R"(",target=")" + name + R"("})";
    int busiest = 0;
    while (cluster.count("status = 'done'") < done) {
        int sum = 0;
        for (auto& node : cluster.nodes) {
            const auto out = E2eCluster::metric(node, series);
            CHECK(out.value_or(0) <= share);
            sum += static_cast<int>(out.value_or(0));
        }
        busiest = std::max(busiest, sum);
    }
    return busiest;
}

void stage_rows(E2eCluster& cluster, int rows, const std::string& type, const std::string& prefix) {
    cluster.db.exec(
        "INSERT INTO outbox (dispatch_key, workflow_id, ordinal, activity_type, input) "
        "SELECT '" +
        prefix + "-' || g, 'order-' || g, 0, '" + type +
        "', jsonb_build_object('n', g) FROM generate_series(1, " + std::to_string(rows) + ") g");
}

}  // namespace outboxd::test
