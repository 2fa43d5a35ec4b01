// HTTP push targets: URLs, the host allow-list, bounds and headers.

#include <catch2/catch.hpp>

#include "outboxd/sinks/http_push/target_check.hpp"

using namespace outboxd;
namespace push = outboxd::sinks::http_push;
using push::HostPolicy;

namespace {

store::HttpTargetSettings valid_target() {
    store::HttpTargetSettings t;
    t.name = "billing-hook";
    t.activity_types = {"charge"};
    t.url = "https://hooks.example.com/outboxd?tenant=7";
    return t;
}

std::string field_of(const store::HttpTargetSettings& t, const HostPolicy& policy = {}) {
    const auto problem = push::check_target(t, policy);
    return problem ? problem->field : "";
}

}  // namespace

TEST_CASE("a target URL is taken apart for the request line and Host header", "[unit][push]") {
    const auto url = push::parse_target_url("https://Hooks.Example.com:8443/a/b?x=1&y=%20");
    REQUIRE(url);
    CHECK(url->tls);
    CHECK(url->host == "hooks.example.com");
    CHECK(url->port == 8443);
    CHECK(url->target == "/a/b?x=1&y=%20");
    CHECK(url->host_header == "Hooks.Example.com:8443");
    CHECK_FALSE(url->host_is_address);

    const auto plain = push::parse_target_url("http://127.0.0.1");
    REQUIRE(plain);
    CHECK(plain->port == 80);
    CHECK(plain->target == "/");
    CHECK(plain->host_is_address);

    const auto v6 = push::parse_target_url("http://[::1]:9000/hook");
    REQUIRE(v6);
    CHECK(v6->host == "::1");
    CHECK(v6->host_header == "[::1]:9000");
}

TEST_CASE("target URLs that cannot be pushed to are refused with the reason", "[unit][push]") {
    CHECK(push::url_problem("ftp://x/y").value() == "must use http or https, not 'ftp'");
    CHECK(push::url_problem("/relative").has_value());
    CHECK(push::url_problem("http:///nohost").has_value());
    CHECK(push::url_problem("http://user:pw@host/").value().find("user info") != std::string::npos);
    CHECK(push::url_problem("http://host/#frag").has_value());
    CHECK(push::url_problem("http://host:0/").has_value());
    CHECK(push::url_problem("http://host:99999/").has_value());
    CHECK(push::url_problem("http://host/" + std::string(3000, 'a')).has_value());
    CHECK(push::url_problem("http://bad host/").has_value());
    CHECK_FALSE(push::url_problem("http://host:65535/").has_value());
}

TEST_CASE("the allow-list admits names, suffixes and address blocks only", "[unit][push]") {
    CHECK(HostPolicy::list_problem("a.example.com, *.hooks.io,10.0.0.0/8,::1/128,192.0.2.7") ==
          std::nullopt);
    CHECK(HostPolicy::list_problem("10.0.0.0/33").has_value());
    CHECK(HostPolicy::list_problem("bad_host!").has_value());
    CHECK(HostPolicy::list_problem("").has_value() == false);

    const auto policy = HostPolicy::parse("a.example.com,*.hooks.io");
    const auto url = [](const std::string& u) { return *push::parse_target_url(u); };
    CHECK_FALSE(policy.host_problem(url("https://a.example.com/")));
    CHECK_FALSE(policy.host_problem(url("https://x.y.hooks.io/")));
    CHECK(policy.host_problem(url("https://hooks.io/")).has_value());  // the suffix, not the name
    CHECK(policy.host_problem(url("https://evil.com/")).has_value());
    // A name that matched may connect wherever it resolves, but link-local.
    CHECK_FALSE(policy.address_problem(url("https://a.example.com/"), "203.0.113.5"));
    CHECK(policy.address_problem(url("https://a.example.com/"), "169.254.169.254").has_value());

    const auto blocks = HostPolicy::parse("10.0.0.0/8");
    // A name passes the PUT while blocks exist: its addresses are checked when resolved.
    CHECK_FALSE(blocks.host_problem(url("http://internal.svc/")));
    CHECK_FALSE(blocks.address_problem(url("http://internal.svc/"), "10.1.2.3"));
    CHECK(blocks.address_problem(url("http://internal.svc/"), "11.1.2.3").has_value());
    CHECK(blocks.host_problem(url("http://11.0.0.1/")).has_value());
}

TEST_CASE("link-local addresses are refused unless a block names them", "[unit][push]") {
    const HostPolicy open;
    const auto metadata = *push::parse_target_url("http://169.254.169.254/latest/meta-data");
    CHECK(open.host_problem(metadata).value().find("link-local") != std::string::npos);
    CHECK(open.address_problem(metadata, "::ffff:169.254.169.254").has_value());
    CHECK(
        open.address_problem(*push::parse_target_url("http://[fe80::1]/"), "fe80::1").has_value());
    CHECK_FALSE(open.host_problem(*push::parse_target_url("http://127.0.0.1:9/")));
    CHECK_FALSE(HostPolicy::parse("169.254.169.254/32").host_problem(metadata));
}

TEST_CASE("every field of a target is checked and the first bad one named", "[unit][push]") {
    CHECK(field_of(valid_target()).empty());
    auto t = valid_target();
    t.name = "has space";
    CHECK(field_of(t) == "name");
    t = valid_target();
    t.namespace_name = std::string("a\0b", 3);
    CHECK(field_of(t) == "namespace");
    t = valid_target();
    t.activity_types.clear();
    CHECK(field_of(t) == "activity_types");
    t = valid_target();
    t.url = "gopher://x";
    CHECK(field_of(t) == "url");
    t = valid_target();
    CHECK(field_of(t, HostPolicy::parse("other.example.com")) == "url");
    t = valid_target();
    t.max_in_flight = 0;
    CHECK(field_of(t) == "max_in_flight");
    t = valid_target();
    t.timeout_ms = push::kMaxTargetTimeoutMs + 1;
    CHECK(field_of(t) == "timeout_ms");
    t = valid_target();
    t.signing_secret = "";
    CHECK(field_of(t) == "signing_secret");
    t = valid_target();
    t.ca_file = "relative.pem";
    CHECK(field_of(t) == "ca_file");
    t = valid_target();
    t.url = "http://plain/";
    t.ca_file = "/etc/ca.pem";
    CHECK(field_of(t) == "ca_file");
}

TEST_CASE("configured headers cannot break the request or replace outboxd's own", "[unit][push]") {
    const auto with = [](std::string name, std::string value) {
        auto t = valid_target();
        t.headers = {{std::move(name), std::move(value)}};
        return push::check_target(t, {});
    };
    CHECK_FALSE(with("Authorization", "Bearer abc"));
    CHECK(with("X-Evil", "a\r\nHost: other").has_value());
    CHECK(with("Bad Name", "v").has_value());
    CHECK(with("Content-Length", "5").has_value());
    CHECK(with("host", "x").has_value());
    CHECK(with("Outboxd-Signature", "t=1,v1=00").has_value());
    CHECK(with("X-Long", std::string(push::kMaxHeaderValueBytes + 1, 'a')).has_value());
    auto twice = valid_target();
    twice.headers = {{"X-A", "1"}, {"x-a", "2"}};
    CHECK(push::check_target(twice, {})->field == "headers");
}

TEST_CASE("a secret in clear may not look like an encrypted one", "[unit][push]") {
    auto t = valid_target();
    t.signing_secret = "enc:v1:k1:AAAA";
    CHECK(field_of(t) == "signing_secret");
    t = valid_target();
    t.headers = {{"Authorization", "enc:anything"}};
    CHECK(field_of(t) == "headers");
    t = valid_target();
    t.signing_secret = "not enc:";
    t.headers = {{"Authorization", "Bearer enc:x"}};
    CHECK(field_of(t).empty());
}

TEST_CASE("the URL the API shows has no query", "[unit][push]") {
    CHECK(push::url_without_query("https://hooks.example.com/outboxd?token=s3cret&x=1") ==
          "https://hooks.example.com/outboxd?…");
    CHECK(push::url_without_query("https://hooks.example.com/?") == "https://hooks.example.com/?…");
    CHECK(push::url_without_query("http://127.0.0.1:9/hook") == "http://127.0.0.1:9/hook");
    // What GET shows is not a URL a PUT takes back by mistake.
    CHECK(push::url_problem(push::url_without_query("https://h.example/x?t=1")));
}
