// `?database=` of an API request against the databases of a node (README, "HTTP API"): which
// ones each kind of route acts on, and every bad value refused naming the parameter.

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <prometheus/registry.h>

#include "http/database_param.hpp"
#include "outboxd/metrics/node_metrics.hpp"
#include "outboxd/worker/worker_registry.hpp"

using namespace outboxd;
using http::Databases;

namespace {

// A node's engines, never started: nothing reaches their database (nobody listens on
// port 1 of the loopback).
struct Engines {
    explicit Engines(const std::vector<std::string>& names) : metrics(registry), engines(workers) {
        for (const auto& name : names) {
            engine::EngineSettings settings;
            settings.name = name;
            settings.database_url = "postgresql://127.0.0.1:1/x?connect_timeout=1";
            settings.member = {"node", "node/boot", "ws://127.0.0.1:8080/v1/workers",
                               std::chrono::milliseconds{5000}};
            engines.add(std::make_unique<engine::OutboxEngine>(
                engine::EngineContext{ioc.get_executor(), workers, metrics, engines}, settings));
        }
    }

    prometheus::Registry registry;
    metrics::NodeMetrics metrics;
    boost::asio::io_context ioc{1};
    worker::WorkerRegistry workers;
    engine::EngineDirectory engines;
};

std::vector<std::string> chosen(const Engines& node, Databases scope, const std::string& target,
                                const std::string& control = {}) {
    const auto parsed = std::get<http::ParsedTarget>(http::parse_target(target));
    const auto result = http::choose_databases(scope, parsed, node.engines, control);
    if (const auto* refused = std::get_if<http::ApiResponse>(&result)) {
        const auto error = nlohmann::json::parse(refused->body)["error"];
        return {std::to_string(refused->status) + " " + error["code"].get<std::string>()};
    }
    std::vector<std::string> names;
    for (const auto* engine : std::get<std::vector<engine::OutboxEngine*>>(result)) {
        names.push_back(engine->name());
    }
    return names;
}

using Names = std::vector<std::string>;

}  // namespace

TEST_CASE("database names are [a-z0-9_-]{1,32}", "[unit][http]") {
    CHECK(http::is_database_name("orders"));
    CHECK(http::is_database_name("a_b-9"));
    CHECK(http::is_database_name(std::string(32, 'a')));
    for (const auto& bad :
         std::vector<std::string>{"", "Orders", "a.b", "a b", std::string(33, 'a'),
                                  std::string{"a\0b", 3}, "caf\xc3\xa9"}) {
        CHECK_FALSE(http::is_database_name(bad));
    }
}

TEST_CASE("each kind of route acts on the databases ?database= names, or on which it may",
          "[unit][http]") {
    const Engines several{{"orders", "billing", "shipping"}};
    CHECK(chosen(several, Databases::one, "/x?database=billing") == Names{"billing"});
    CHECK(chosen(several, Databases::one, "/x") == Names{"400 database_required"});
    CHECK(chosen(several, Databases::any, "/x") == Names{"orders", "billing", "shipping"});
    CHECK(chosen(several, Databases::any, "/x?database=shipping") == Names{"shipping"});
    CHECK(chosen(several, Databases::control, "/x?database=orders", "billing") == Names{"billing"});
    CHECK(chosen(several, Databases::control, "/x") == Names{"orders"});
    CHECK(chosen(several, Databases::none, "/x?database=nope").empty());
    for (const auto scope : {Databases::one, Databases::any, Databases::control}) {
        CHECK(chosen(several, scope, "/x?database=nope") == Names{"404 unknown_database"});
        for (const auto& bad : std::vector<std::string>{
                 "/x?database=", "/x?database=Orders", "/x?database=orders&database=orders",
                 "/x?database=orders&database=billing", "/x?database=" + std::string(10000, 'a'),
                 "/x?database=caf%C3%A9", "/x?database=a%2Eb"}) {
            CAPTURE(bad);
            CHECK(chosen(several, scope, bad) == Names{"400 invalid_request"});
        }
    }

    const Engines one{{"default"}};
    CHECK(chosen(one, Databases::one, "/x") == Names{"default"});
    CHECK(chosen(one, Databases::one, "/x?database=default") == Names{"default"});
    CHECK(chosen(one, Databases::any, "/x") == Names{"default"});
    CHECK(chosen(one, Databases::one, "/x?database=orders") == Names{"404 unknown_database"});
}
