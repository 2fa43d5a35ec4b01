// HTTP push targets: URLs, the host allow-list, bounds and headers.

#include <catch2/catch.hpp>

#include "outboxd/sinks/http_push/target_check.hpp"

using namespace outboxd;
namespace push = outboxd::sinks::http_push;
using push::HostPolicy;

namespace {

store::TargetSettings valid_target() {
    store::TargetSettings t;
    t.name = "billing-hook";
    t.activity_types = {"charge"};
    t.url = "https://hooks.example.com/outboxd?tenant=7";
    return t;
}

std::string field_of(const store::TargetSettings& t, const HostPolicy& policy = {}) {
    const auto problem = push::check_target(t, policy);
    return problem ? problem->field : "";
}

push::TargetUrl url_of(const std::string& text) {
    const auto parsed = push::parse_target_url(text);
    REQUIRE(parsed);
    return *parsed;
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
    CHECK_FALSE(policy.host_problem(url_of("https://a.example.com/")));
    CHECK_FALSE(policy.host_problem(url_of("https://x.y.hooks.io/")));
    CHECK(
        policy.host_problem(url_of("https://hooks.io/")).has_value());  // the suffix, not the name
    CHECK(policy.host_problem(url_of("https://evil.com/")).has_value());
    // A name that matched may connect wherever it resolves, if that is a public address.
    CHECK_FALSE(policy.address_problem(url_of("https://a.example.com/"), "203.0.113.5"));
    CHECK(policy.address_problem(url_of("https://a.example.com/"), "169.254.169.254").has_value());
    CHECK(policy.address_problem(url_of("https://a.example.com/"), "10.0.0.7").has_value());

    const auto blocks = HostPolicy::parse("10.0.0.0/8");
    // A name passes the PUT while blocks exist: its addresses are checked when resolved.
    CHECK_FALSE(blocks.host_problem(url_of("http://internal.svc/")));
    CHECK_FALSE(blocks.address_problem(url_of("http://internal.svc/"), "10.1.2.3"));
    CHECK(blocks.address_problem(url_of("http://internal.svc/"), "11.1.2.3").has_value());
    CHECK(blocks.host_problem(url_of("http://11.0.0.1/")).has_value());
}

TEST_CASE("without an allow-list, only public addresses may be pushed to", "[unit][push]") {
    const HostPolicy open;
    for (const auto* text :
         {"http://127.0.0.1/", "http://127.8.9.10:8080/", "http://0.0.0.0/", "http://0.1.2.3/",
          "http://[::1]/", "http://[::]/", "http://10.0.0.1/", "http://172.16.5.4/",
          "http://192.168.1.1/", "http://[fd12::1]/", "http://169.254.1.1/", "http://[fe80::1]/",
          "http://100.64.0.1/", "http://169.254.169.254/latest", "http://[fd00:ec2::254]/",
          "http://100.100.100.200/", "http://[::ffff:127.0.0.1]/", "http://[::ffff:10.0.0.1]/",
          "http://[64:ff9b::a9fe:a9fe]/"}) {
        INFO(text);
        CHECK(open.host_problem(url_of(text)).has_value());
    }
    for (const auto* text : {"http://8.8.8.8/", "https://[2001:db8::1]:8443/x",
                             "https://hooks.example.com/", "http://localhost.example.com/"}) {
        INFO(text);
        CHECK_FALSE(open.host_problem(url_of(text)));
    }
    // A public address that a name resolves to passes; any other is refused.
    const auto named = url_of("https://hooks.example.com/");
    CHECK_FALSE(open.address_problem(named, "93.184.216.34"));
    CHECK_FALSE(open.address_problem(named, "2606:2800:220:1::1"));
    CHECK(open.address_problem(named, "127.0.0.1").has_value());
    CHECK(open.address_problem(named, "::ffff:192.168.0.1").has_value());
    CHECK(open.address_problem(named, "fe80::1%1").has_value());
    CHECK(open.address_problem(named, "not-an-address").has_value());
}

TEST_CASE("a refusal names the class and how to allow the address", "[unit][push]") {
    const HostPolicy open;
    const auto literal = open.host_problem(url_of("http://127.0.0.1:9/")).value();
    CHECK_THAT(literal, Catch::Contains("127.0.0.1 is a loopback address (127.0.0.0/8, ::1)"));
    CHECK_THAT(literal, Catch::Contains("OUTBOXD_HTTP_ALLOWED_HOSTS"));
    CHECK_THAT(open.host_problem(url_of("http://0.0.0.0/")).value(),
               Catch::Contains("an unspecified address"));
    CHECK_THAT(open.host_problem(url_of("http://169.254.169.254/")).value(),
               Catch::Contains("a cloud metadata address"));
    CHECK_THAT(open.host_problem(url_of("http://100.64.1.1/")).value(),
               Catch::Contains("a carrier-grade NAT address"));

    const auto resolved = open.address_problem(url_of("http://db.internal/"), "10.2.3.4").value();
    CHECK_THAT(resolved, Catch::Contains("'db.internal' resolves to 10.2.3.4, a private address"));
    CHECK_THAT(resolved, Catch::Contains("OUTBOXD_HTTP_ALLOWED_HOSTS"));
    // A name entry is said not to be enough.
    const auto named = HostPolicy::parse("db.internal");
    CHECK_THAT(named.address_problem(url_of("http://db.internal/"), "10.2.3.4").value(),
               Catch::Contains("name is not enough"));
}

TEST_CASE("localhost and names under it are loopback", "[unit][push]") {
    const HostPolicy open;
    for (const auto* text : {"http://localhost/", "http://LOCALHOST:8080/", "http://localhost./",
                             "http://api.localhost/", "http://loc%61lhost/"}) {
        INFO(text);
        const auto why = open.host_problem(url_of(text));
        REQUIRE(why.has_value());
        CHECK_THAT(*why, Catch::Contains("loopback"));
        CHECK_THAT(*why, Catch::Contains("OUTBOXD_HTTP_ALLOWED_HOSTS"));
    }
    // Allowed at the PUT by its name or by a block holding a loopback address ...
    CHECK_FALSE(HostPolicy::parse("localhost").host_problem(url_of("http://localhost/")));
    CHECK_FALSE(HostPolicy::parse("*.localhost").host_problem(url_of("http://a.localhost/")));
    CHECK_FALSE(HostPolicy::parse("127.0.0.1").host_problem(url_of("http://localhost/")));
    CHECK_FALSE(HostPolicy::parse("::1").host_problem(url_of("http://localhost/")));
    CHECK(HostPolicy::parse("10.0.0.0/8").host_problem(url_of("http://localhost/")).has_value());
    // ... but only an address entry lets a connection reach it.
    const auto localhost = url_of("http://localhost:8091/");
    CHECK(HostPolicy::parse("localhost").address_problem(localhost, "127.0.0.1").has_value());
    CHECK_FALSE(HostPolicy::parse("127.0.0.1").address_problem(localhost, "127.0.0.1"));
    CHECK(HostPolicy::parse("127.0.0.1").address_problem(localhost, "::1").has_value());
}

TEST_CASE("IPv4 shorthands the resolver takes as numbers are checked as addresses",
          "[unit][push]") {
    const HostPolicy open;
    for (const auto* text : {"http://127.1/", "http://2130706433/", "http://0x7f.0.0.1/",
                             "http://0177.0.0.1/", "http://10.1/", "http://0/"}) {
        INFO(text);
        const auto url = url_of(text);
        CHECK_FALSE(url.host_is_address);
        CHECK(open.host_problem(url).has_value());
    }
    CHECK_FALSE(open.host_problem(url_of("http://134744072/")));  // 8.8.8.8
    CHECK_FALSE(HostPolicy::parse("127.0.0.0/8").host_problem(url_of("http://127.1/")));
}

TEST_CASE("an address entry of the allow-list admits addresses of any class", "[unit][push]") {
    const auto policy = HostPolicy::parse(
        "127.0.0.1, 0.0.0.0, 10.0.0.0/8, fd00::/8, 169.254.169.254/32, ::ffff:192.168.1.0/120");
    for (const auto* text :
         {"http://127.0.0.1:9/", "http://0.0.0.0/", "http://10.200.0.1/", "http://[fd00:ec2::254]/",
          "http://169.254.169.254/", "http://[::ffff:10.0.0.1]/", "http://192.168.1.77/"}) {
        INFO(text);
        CHECK_FALSE(policy.host_problem(url_of(text)));
    }
    // What the entries do not hold stays refused: other loopback and private addresses, the
    // rest of link-local, and public addresses (the list has no name entries to vouch).
    for (const auto* text : {"http://127.0.0.2/", "http://[::1]/", "http://172.16.0.1/",
                             "http://192.168.2.1/", "http://169.254.0.1/", "http://8.8.8.8/"}) {
        INFO(text);
        CHECK(policy.host_problem(url_of(text)).has_value());
    }
    // A name whose address a block holds connects; the block vouches for the address.
    const auto internal = url_of("https://hooks.internal/");
    CHECK_FALSE(policy.address_problem(internal, "10.9.8.7"));
    CHECK(policy.address_problem(internal, "172.20.0.1").has_value());
    // Names and blocks together, as the README suggests.
    const auto mixed = HostPolicy::parse("10.0.0.0/8,hooks.internal");
    CHECK_FALSE(mixed.address_problem(internal, "10.0.0.5"));
    CHECK(mixed.address_problem(internal, "192.168.0.5").has_value());
    CHECK_FALSE(mixed.address_problem(url_of("https://hooks.example.com/"), "10.0.0.5"));
    CHECK(mixed.address_problem(url_of("https://hooks.example.com/"), "8.8.8.8").has_value());
}

TEST_CASE("link-local addresses are refused unless a block names them", "[unit][push]") {
    const HostPolicy open;
    const auto metadata = *push::parse_target_url("http://169.254.169.254/latest/meta-data");
    CHECK(open.host_problem(metadata).value().find("cloud metadata") != std::string::npos);
    CHECK(open.address_problem(metadata, "::ffff:169.254.169.254").has_value());
    CHECK(
        open.address_problem(*push::parse_target_url("http://[fe80::1]/"), "fe80::1").has_value());
    CHECK_FALSE(HostPolicy::parse("169.254.169.254/32").host_problem(metadata));
    // A name entry does not let a name lead there.
    CHECK(HostPolicy::parse("*.example.com")
              .address_problem(*push::parse_target_url("http://a.example.com/"), "169.254.1.2")
              .has_value());
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
    t.activity_types.clear();  // none: every type
    CHECK(field_of(t).empty());
    t.activity_types.assign(257, "charge");
    CHECK(field_of(t) == "activity_types");
    t = valid_target();
    t.activity_types = {"ok", std::string("a\0b", 3)};
    CHECK(field_of(t) == "activity_types");
    t.activity_types = {std::string(std::size_t{1} << 20, 'a')};  // 1 MB
    CHECK(field_of(t) == "activity_types");
    t.activity_types = {"bad\xff\xfe"};  // not UTF-8
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
