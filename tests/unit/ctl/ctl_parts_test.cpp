// The operator CLI's pure parts: --url parsing, percent-encoding, table cells and layout; and
// where the admin token comes from.

#include <array>
#include <cstdlib>
#include <optional>
#include <sstream>
#include <utility>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "ctl/api_client.hpp"
#include "ctl/table.hpp"
#include "outboxd/ctl/ctl.hpp"

using namespace outboxd::ctl;
using nlohmann::json;

TEST_CASE("the CLI's URL is scheme://host[:port] and nothing else", "[unit][ctl]") {
    const auto plain = parse_endpoint("http://127.0.0.1:8080/");
    CHECK_FALSE(plain.tls);
    CHECK(plain.host == "127.0.0.1");
    CHECK(plain.port == "8080");
    const auto tls = parse_endpoint("https://node.example");
    CHECK(tls.tls);
    CHECK(tls.port == "443");
    const auto v6 = parse_endpoint("http://[::1]:9000");
    CHECK(v6.host == "::1");
    CHECK(v6.port == "9000");
    for (const auto* bad :
         {"127.0.0.1:8080", "ftp://x", "http://", "http://h:0", "http://h:65536", "http://h:80/v1",
          "http://u@h:80", "http://h:8o", "http://[::1", "http://h:123456"}) {
        CAPTURE(bad);
        CHECK_THROWS_AS(parse_endpoint(bad), ReachError);
    }
}

TEST_CASE("path segments and query values are percent-encoded", "[unit][ctl]") {
    CHECK(encode_component("order-42:0") == "order-42%3A0");
    CHECK(encode_component("a/b c?d&e") == "a%2Fb%20c%3Fd%26e");
    CHECK(encode_component("Az09-_.~") == "Az09-_.~");
    CHECK(encode_component("\xC3\xA9") == "%C3%A9");
}

TEST_CASE("cells show JSON plainly, safely and cut to size", "[unit][ctl]") {
    CHECK(cell(json("text")) == "text");
    CHECK(cell(json(nullptr)) == "-");
    CHECK(cell(json(42)) == "42");
    CHECK(cell(json{{"a", 1}}) == R"({"a":1})");
    CHECK(cell(json("line\nbreak\x1b[31m")) == "line break [31m");
    CHECK(cell(json(std::string(100, 'x')), 10) == std::string(10, 'x') + "…");
    // Never cut inside a UTF-8 sequence.
    CHECK(cell(json("ab\xC3\xA9"), 3) == "ab…");
}

TEST_CASE("tables pad every column to its widest cell", "[unit][ctl]") {
    Table table{{"NAME", "N"}};
    table.add({"é-long-name", "1"});
    table.add({"x", "12345"});
    std::ostringstream out;
    table.print(out);
    CHECK(out.str() ==
          "NAME         N\n"
          "é-long-name  1\n"
          "x            12345\n");
}

TEST_CASE("the admin token may come from a file, not from both places", "[unit][ctl]") {
    // Sets the two variables for one run of `outboxd ctl status`, then restores them.
    const auto run_with = [](const char* token, const char* file) {
        const auto saved = [](const char* name) -> std::optional<std::string> {
            const char* value = std::getenv(name);
            return value ? std::optional<std::string>{value} : std::nullopt;
        };
        const auto set = [](const char* name, const std::optional<std::string>& value) {
            if (value) {
                ::setenv(name, value->c_str(), 1);
            } else {
                ::unsetenv(name);
            }
        };
        const auto old_token = saved("OUTBOXD_ADMIN_TOKEN");
        const auto old_file = saved("OUTBOXD_ADMIN_TOKEN_FILE");
        set("OUTBOXD_ADMIN_TOKEN", token ? std::optional<std::string>{token} : std::nullopt);
        set("OUTBOXD_ADMIN_TOKEN_FILE", file ? std::optional<std::string>{file} : std::nullopt);
        std::ostringstream out, err;
        const std::array<const char*, 2> argv{"ctl", "status"};
        const int status = outboxd::ctl::run(2, argv.data(), out, err);
        set("OUTBOXD_ADMIN_TOKEN", old_token);
        set("OUTBOXD_ADMIN_TOKEN_FILE", old_file);
        return std::make_pair(status, err.str());
    };
    const auto [missing, missing_error] = run_with(nullptr, "/nonexistent/admin-token");
    CHECK(missing == 2);
    CHECK_THAT(missing_error,
               Catch::Contains("OUTBOXD_ADMIN_TOKEN_FILE: cannot read '/nonexistent/admin-token'"));
    const auto [both, both_error] = run_with("t", "/proc/self/cmdline");
    CHECK(both == 2);
    CHECK_THAT(both_error, Catch::Contains("both set"));
}
