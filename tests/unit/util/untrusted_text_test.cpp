#include <catch2/catch.hpp>

#include "outboxd/util/failure_run.hpp"
#include "outboxd/util/untrusted_text.hpp"

using namespace outboxd::util;
using namespace std::chrono_literals;

TEST_CASE("UTF-8 validation refuses what PostgreSQL and JSON would refuse", "[unit][util]") {
    CHECK(is_valid_utf8(""));
    CHECK(is_valid_utf8("plain ascii"));
    CHECK(is_valid_utf8("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"));  // é € 😀
    CHECK_FALSE(is_valid_utf8("\xc3"));                                 // truncated
    CHECK_FALSE(is_valid_utf8("\xff\xfe"));                             // never UTF-8
    CHECK_FALSE(is_valid_utf8("\xc0\xaf"));                             // overlong '/'
    CHECK_FALSE(is_valid_utf8("\xe0\x80\xaf"));                         // overlong
    CHECK_FALSE(is_valid_utf8("\xed\xa0\x80"));                         // a surrogate
    CHECK_FALSE(is_valid_utf8("\xf4\x90\x80\x80"));                     // past U+10FFFF
    CHECK(is_valid_utf8(std::string{"a\0b", 3}));  // NUL is UTF-8; identifiers refuse it
}

TEST_CASE("identifier problems are named", "[unit][util]") {
    CHECK_FALSE(identifier_problem("charge", 64));
    CHECK(identifier_problem("", 64) == "is empty");
    CHECK(identifier_problem(std::string(65, 'x'), 64) == "is longer than 64 bytes");
    CHECK(identifier_problem(std::string{"b\0", 2}, 64) == "contains a NUL byte");
    CHECK(identifier_problem("bad\xc3", 64) == "is not valid UTF-8");
}

TEST_CASE("free text is made safe to store, and cut at a character boundary", "[unit][util]") {
    CHECK(sanitize_text("card declined", 100) == "card declined");
    CHECK(sanitize_text(std::string{"card\0declined", 13}, 100) ==
          "card\xef\xbf\xbd"
          "declined");
    CHECK(sanitize_text("a\xff"
                        "b",
                        100) ==
          "a\xef\xbf\xbd"
          "b");
    const auto cut = sanitize_text(std::string(10000, 'x'), 100);
    CHECK(cut.size() <= 100);
    CHECK(cut.ends_with("\xe2\x80\xa6"));
    // Never splits a character: 50 two-byte characters into 20 bytes.
    std::string accents;
    for (int i = 0; i < 50; ++i) accents += "\xc3\xa9";
    const auto short_text = sanitize_text(accents, 20);
    CHECK(short_text.size() <= 20);
    CHECK(is_valid_utf8(short_text));
    CHECK(sanitize_text("exactly", 7) == "exactly");
}

TEST_CASE("log text cannot forge a line or a field", "[unit][util]") {
    CHECK(log_safe("w1") == "w1");
    CHECK(log_safe("w1\nlevel=error event=fake") == "w1\\nlevel=error event=fake");
    CHECK(log_safe("a\"b\\c") == "a\\\"b\\\\c");
    CHECK(log_safe(std::string{"\x01\0\x7f", 3}) == "\\x01\\x00\\x7f");
    CHECK(log_safe("\xff") == "\\xff");
    CHECK(log_safe("\xc3\xa9") == "\xc3\xa9");
    CHECK(log_safe("a\xe2\x80\xa8"
                   "b") == "a\\u2028b");               // line separator
    CHECK(log_safe("x\xe2\x80\xaey") == "x\\u202ey");  // right-to-left override
    CHECK(log_safe("\xc2\x85") == "\\u0085");          // NEL, a C1 control
    const auto cut = log_safe(std::string(1000, 'y'), 50);
    CHECK(cut.size() <= 50 + 3);
}

TEST_CASE("JSON nesting is measured outside strings and stops early", "[unit][util]") {
    CHECK(json_nesting_depth("1", 10) == 0);
    CHECK(json_nesting_depth(R"({"a":[1,{"b":[]}]})", 10) == 4);
    CHECK(json_nesting_depth(R"({"a":"[[[[[[\"[["})", 10) == 1);
    const std::string deep(1'000'000, '[');
    CHECK(json_nesting_depth(deep, 128) == 129);
}

TEST_CASE("a failure run logs its first failure, a summary now and then, and its end",
          "[unit][util]") {
    FailureRun run{30s};
    const FailureRun::Clock::time_point t0{};
    CHECK(run.failed(t0));
    CHECK_FALSE(run.failed(t0 + 1s));
    CHECK_FALSE(run.failed(t0 + 29s));
    CHECK(run.failed(t0 + 31s));
    CHECK_FALSE(run.failed(t0 + 32s));
    CHECK(run.failures() == 5);
    CHECK(run.lasted(t0 + 40s) == 40s);
    CHECK(run.succeeded() == 5);
    CHECK(run.succeeded() == 0);
    CHECK(run.failed(t0 + 50s));  // a new run logs again at once
}

TEST_CASE("a traceparent is the W3C version 00 layout, lowercase, without invalid ids",
          "[unit][util]") {
    const std::string good = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    CHECK_FALSE(traceparent_problem(good));
    CHECK(trace_id_of(good) == "4bf92f3577b34da6a3ce929d0e0e4736");
    CHECK_FALSE(traceparent_problem("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00"));
    // Each rule names itself.
    CHECK(traceparent_problem("").value().find("55 characters") != std::string::npos);
    CHECK(traceparent_problem(good + "-x").value().find("55 characters") != std::string::npos);
    CHECK(traceparent_problem("00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
              .value()
              .find("dash") != std::string::npos);
    CHECK(traceparent_problem("00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01")
              .value()
              .find("lowercase") != std::string::npos);
    CHECK(traceparent_problem("ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
              .value()
              .find("ff") != std::string::npos);
    CHECK(traceparent_problem("00-00000000000000000000000000000000-00f067aa0ba902b7-01")
              .value()
              .find("trace id") != std::string::npos);
    CHECK(traceparent_problem("00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01")
              .value()
              .find("parent id") != std::string::npos);
    CHECK(traceparent_problem(
              std::string{"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0\0", 55})
              .has_value());
    CHECK(trace_id_of("not one").empty());
}

TEST_CASE("a NUL escape in JSON text is told from an escaped backslash before u0000",
          "[unit][util]") {
    CHECK_FALSE(json_text_has_nul(R"({"a":1})"));
    CHECK(json_text_has_nul(R"("\u0000")"));
    CHECK(json_text_has_nul(R"({"k":"ab\u0000c"})"));
    CHECK_FALSE(json_text_has_nul(R"("\\u0000")"));  // a backslash, then the text u0000
    CHECK(json_text_has_nul(R"("\\\u0000")"));       // a backslash, then a NUL
    CHECK_FALSE(json_text_has_nul(R"("u0000")"));
    CHECK(json_text_has_nul(R"("\u00001")"));  // a NUL, then the digit 1
}

TEST_CASE("a traceparent of a megabyte, bad UTF-8 or NUL bytes is refused without a scan",
          "[unit][util]") {
    CHECK(traceparent_problem(std::string(1 << 20, 'a')).value().find("55") != std::string::npos);
    std::string utf8(55, '0');
    utf8.replace(3, 2, "\xc3\xa9");  // é where hex digits belong
    CHECK(traceparent_problem(utf8).has_value());
    CHECK(traceparent_problem(std::string(55, '\0')).has_value());
    CHECK(trace_id_of(std::string(1 << 20, '-')).empty());
}
