#include "http_push_scenario.hpp"

#include <chrono>
#include <fstream>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <thread>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "bench_database.hpp"
#include "child_process.hpp"
#include "http_client.hpp"
#include "http_sink.hpp"
#include "node_fleet.hpp"
#include "proc_stat.hpp"

namespace outboxd::bench {
namespace {

constexpr std::chrono::seconds kReadyTimeout{30};

// Sets the target `bench` of namespace default (activity noop) to `url` on the first node,
// and waits until that node serves it.
void put_target(NodeFleet& fleet, const std::string& url, int max_in_flight) {
    const auto& node = fleet.http_urls().front();
    const nlohmann::json body = {{"activity_types", {"noop"}},
                                 {"url", url},
                                 {"max_in_flight", max_in_flight},
                                 {"timeout_ms", 30000}};
    const auto put = http_request(node, "PUT", "/v1/http-targets/bench", body.dump());
    if (put.status != 200) {
        throw std::runtime_error{"PUT /v1/http-targets/bench answered " +
                                 std::to_string(put.status) + ": " + put.body};
    }
    const auto deadline = std::chrono::steady_clock::now() + kReadyTimeout;
    for (;;) {
        const auto got = nlohmann::json::parse(
            http_request(node, "GET", "/v1/http-targets/bench").body, nullptr, false);
        if (got.is_object() && got["node"]["share"].is_number() && got["node"]["share"] > 0) {
            return;
        }
        if (std::chrono::steady_clock::now() > deadline) {
            throw std::runtime_error{"the node never served the HTTP target"};
        }
        std::this_thread::sleep_for(std::chrono::milliseconds{5});
    }
}

// outboxd-receiver on a free port; its port, once it listens.
std::uint16_t await_listening(ChildProcess& receiver) {
    const auto deadline = std::chrono::steady_clock::now() + kReadyTimeout;
    for (;;) {
        std::ifstream in{receiver.log_path()};
        std::stringstream text;
        text << in.rdbuf();
        const auto log = text.str();
        if (const auto at = log.find("listening "); at != std::string::npos) {
            const auto colon = log.find(':', at);
            const auto end = log.find('\n', at);
            if (colon != std::string::npos && end != std::string::npos) {
                return static_cast<std::uint16_t>(std::stoi(log.substr(colon + 1, end - colon)));
            }
        }
        if (!receiver.alive()) {
            throw std::runtime_error{"outboxd-receiver exited: " + receiver.log_tail(10)};
        }
        if (std::chrono::steady_clock::now() > deadline) {
            throw std::runtime_error{"outboxd-receiver did not start"};
        }
        std::this_thread::sleep_for(std::chrono::milliseconds{20});
    }
}

}  // namespace

E2eResult run_http_push(const BenchContext& context, const std::string& tag) {
    const auto& settings = context.settings;
    const auto database = "bench_" + tag;
    const auto url = context.databases.create_migrated(database);
    spdlog::info("{}: staging {} rows", tag, settings.http_rows);
    stage_pending_rows(url, settings.http_rows, "e2e-");
    settle(url);

    ChildSpec spec;
    spec.argv = {settings.bin_dir + "/outboxd-receiver", "--listen", "127.0.0.1:0"};
    spec.log_path = settings.work_dir + "/bench-" + tag + "-receiver.log";
    ChildProcess receiver{spec};
    const auto port = await_listening(receiver);

    DrainOptions options;
    options.consume = [&](NodeFleet& fleet) {
        put_target(fleet, "http://127.0.0.1:" + std::to_string(port) + "/hook",
                   settings.http_max_in_flight);
        const auto before = process_cpu_seconds(receiver.pid());
        return std::function<double()>{
            [&receiver, before] { return process_cpu_seconds(receiver.pid()) - before; }};
    };
    auto result = drain_e2e(context, url, 1, tag, options);
    receiver.stop(std::chrono::milliseconds{1000});
    context.databases.drop(database);
    return result;
}

LatencyResult run_http_latency(const BenchContext& context) {
    const auto& settings = context.settings;
    return measure_latency(
        context, "http_latency", [&settings](NodeFleet& fleet, const Arrival& arrived) {
            auto sink = std::make_shared<HttpSink>(arrived);
            put_target(fleet, "http://127.0.0.1:" + std::to_string(sink->port()) + "/hook",
                       settings.http_max_in_flight);
            return std::function<void()>{[sink]() mutable { sink.reset(); }};
        });
}

}  // namespace outboxd::bench
