#pragma once

// An API call of an e2e test that must answer 200: a test failure otherwise, showing the
// answer. Include after Catch.

#include <cstdint>
#include <string>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "net_client.hpp"

namespace outboxd::test {

inline nlohmann::json call_json(std::uint16_t port, const std::string& method,
                                const std::string& target, const std::string& body = {}) {
    const auto result = http_call(port, method, target, body);
    INFO(method << " " << target << " -> " << result.status << " " << result.body);
    REQUIRE(result.status == 200);
    return nlohmann::json::parse(result.body);
}

}  // namespace outboxd::test
