#include "target_setup.hpp"

#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <string_view>
#include <thread>

#include "http_client.hpp"
#include "node_fleet.hpp"

namespace outboxd::bench {
namespace {

constexpr std::chrono::seconds kReadyTimeout{30};
constexpr std::chrono::milliseconds kReadyPoll{5};

}  // namespace

BenchSettings with_loopback_allowed(BenchSettings settings) {
    constexpr std::string_view kVariable = "OUTBOXD_HTTP_ALLOWED_HOSTS";
    auto& env = settings.node_env;
    const auto given = std::find_if(env.begin(), env.end(),
                                    [&](const auto& entry) { return entry.first == kVariable; });
    if (given == env.end()) {
        env.emplace_back(kVariable, "127.0.0.1");
    } else {
        given->second += ",127.0.0.1";
    }
    return settings;
}

void put_target(NodeFleet& fleet, const std::string& path, const nlohmann::json& body,
                TargetReady ready) {
    const auto& node = fleet.http_urls().front();
    const auto put = http_request(node, "PUT", path, body.dump());
    if (put.status != 200) {
        throw std::runtime_error{"PUT " + path + " answered " + std::to_string(put.status) + ": " +
                                 put.body};
    }
    const auto deadline = std::chrono::steady_clock::now() + kReadyTimeout;
    for (;;) {
        const auto got =
            nlohmann::json::parse(http_request(node, "GET", path).body, nullptr, false);
        if (got.is_object()) {
            const auto& view = got["node"];
            const bool served = view["share"].is_number() && view["share"] > 0;
            if (served && (ready == TargetReady::served || view["connected"] == true)) return;
        }
        if (std::chrono::steady_clock::now() > deadline) {
            throw std::runtime_error{"the node never served the target " + path + ": " +
                                     (got.is_object() ? got["node"].dump() : "no answer")};
        }
        std::this_thread::sleep_for(kReadyPoll);
    }
}

}  // namespace outboxd::bench
