#include "target_e2e.hpp"

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

void stage_rows(E2eCluster& cluster, int rows, const std::string& type, const std::string& prefix) {
    cluster.db.exec(
        "INSERT INTO outbox (dispatch_key, workflow_id, ordinal, activity_type, input) "
        "SELECT '" +
        prefix + "-' || g, 'order-' || g, 0, '" + type +
        "', jsonb_build_object('n', g) FROM generate_series(1, " + std::to_string(rows) + ") g");
}

}  // namespace outboxd::test
