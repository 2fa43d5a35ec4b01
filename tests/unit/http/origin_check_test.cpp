// Browser requests to a node without credentials: refused from other origins and at other
// host names (DNS rebinding); clients that are not browsers pass.

#include <catch2/catch.hpp>

#include "http/origin_check.hpp"

using namespace outboxd::http;

TEST_CASE("an open node answers browsers at its own address and origin only", "[unit][http]") {
    const std::vector<std::string> names{"outboxd-1"};
    // curl, workers: no browser marks.
    CHECK_FALSE(browser_refusal({std::nullopt, "evil.example:8080", false}, names));
    // The console, served by the node itself.
    CHECK_FALSE(browser_refusal({"http://127.0.0.1:8080", "127.0.0.1:8080", true}, names));
    CHECK_FALSE(browser_refusal({"http://localhost:8080", "localhost:8080", true}, names));
    CHECK_FALSE(browser_refusal({"http://[::1]:8080", "[::1]:8080", true}, names));
    CHECK_FALSE(browser_refusal({std::nullopt, "outboxd-1:8080", true}, names));
    CHECK_FALSE(browser_refusal({"http://OUTBOXD-1:8080", "outboxd-1:8080", true}, names));
    // Another site's page.
    CHECK(browser_refusal({"http://evil.example", "127.0.0.1:8080", true}, names)
              ->find("other origins") != std::string::npos);
    CHECK(browser_refusal({"null", "127.0.0.1:8080", false}, names));
    // DNS rebinding: the page's own name now points at the node.
    CHECK(browser_refusal({"http://evil.example:8080", "evil.example:8080", true}, names)
              ->find("Host") != std::string::npos);
    CHECK(browser_refusal({std::nullopt, "evil.example:8080", true}, names));
}

TEST_CASE("the host of an authority", "[unit][http]") {
    CHECK(host_of("[::1]:8080") == "::1");
    CHECK(host_of("Node-1:80") == "node-1");
    CHECK(host_of("example.com") == "example.com");
}
