// What an HTTP push exchange makes of its task, Retry-After, signatures and node shares.

#include <catch2/catch.hpp>

#include "outboxd/sinks/http_push/delivery.hpp"
#include "outboxd/sinks/targets/targets.hpp"

using namespace outboxd;
namespace push = outboxd::sinks::http_push;
using push::Exchange;
using push::Verdict;
using namespace std::chrono_literals;

namespace {

Exchange answered(int status, std::string body = {}, std::optional<std::string> retry_after = {}) {
    Exchange e;
    e.status = status;
    e.body = std::move(body);
    e.retry_after = std::move(retry_after);
    return e;
}

constexpr std::time_t kNow = 1'700'000'000;  // 2023-11-14T22:13:20Z

}  // namespace

TEST_CASE("2xx is done, 408, 429 and 5xx retry, other statuses are dead letters", "[unit][push]") {
    CHECK(push::judge(answered(200), kNow).kind == Verdict::Kind::done);
    CHECK(push::judge(answered(204), kNow).kind == Verdict::Kind::done);
    for (const int status : {408, 429, 500, 502, 503, 599}) {
        INFO(status);
        CHECK(push::judge(answered(status), kNow).kind == Verdict::Kind::retry);
    }
    for (const int status : {301, 302, 400, 401, 404, 410, 422}) {
        INFO(status);
        CHECK(push::judge(answered(status), kNow).kind == Verdict::Kind::dead_letter);
    }
    Exchange refused;
    refused.failure = "cannot connect to h:1: Connection refused";
    const auto verdict = push::judge(refused, kNow);
    CHECK(verdict.kind == Verdict::Kind::retry);
    CHECK(verdict.error == refused.failure);
}

TEST_CASE("last_error holds the status and a short, one-line, safe excerpt of the body",
          "[unit][push]") {
    const auto verdict =
        push::judge(answered(400, "bad\nrequest\r\t" + std::string(1000, 'x') + "\xff"), kNow);
    CHECK(verdict.error.starts_with("HTTP 400: bad request  x"));
    CHECK(verdict.error.size() <= 9 + push::kErrorExcerptBytes + 3);
    CHECK(verdict.error.find('\n') == std::string::npos);
    CHECK(push::judge(answered(503), kNow).error == "HTTP 503");
}

TEST_CASE("Retry-After is a minimum delay, in seconds or as a date, capped", "[unit][push]") {
    CHECK(push::judge(answered(429, "", "7"), kNow).min_delay == 7s);
    CHECK(push::judge(answered(503, "", "Tue, 14 Nov 2023 22:13:50 GMT"), kNow).min_delay == 30s);
    CHECK(push::judge(answered(503, "", "Tue, 14 Nov 2023 22:00:00 GMT"), kNow).min_delay == 0s);
    CHECK(push::judge(answered(503, "", "soon"), kNow).min_delay == 0s);
    CHECK(push::judge(answered(503, "", "99999999999999999999"), kNow).min_delay ==
          push::kMaxRetryAfter);
    CHECK(push::judge(answered(503, "", " 3 "), kNow).min_delay == 3s);
    // Only a retry waits: a dead letter's Retry-After means nothing.
    CHECK(push::judge(answered(400, "", "5"), kNow).min_delay == 0s);
}

TEST_CASE("code classes name the status class, a timeout or another failure", "[unit][push]") {
    CHECK(push::code_class(answered(204)) == "2xx");
    CHECK(push::code_class(answered(503)) == "5xx");
    Exchange timeout;
    timeout.failure = push::timed_out_after(250);
    CHECK(push::code_class(timeout) == "timeout");
    Exchange reset;
    reset.failure = "reading the answer of h: Connection reset by peer";
    CHECK(push::code_class(reset) == "error");
}

TEST_CASE("the signature is HMAC-SHA256 of the timestamp, a dot and the body", "[unit][push]") {
    // echo -n '1700000000.{"a":1}' | openssl dgst -sha256 -hmac secret
    CHECK(push::signature("secret", 1'700'000'000, R"({"a":1})") ==
          "t=1700000000,v1=49f24e537407743fa4a0242bb63b94b9a47ee99cbbe071ccd8a22550ae411686");
}

TEST_CASE("a node's share of a target follows its shards and sums to the bound", "[unit][push]") {
    const outboxd::sinks::ShardCounts alone{{"a", 1024}};
    CHECK(outboxd::sinks::targets::node_share(64, alone, "a") == 64);
    const outboxd::sinks::ShardCounts three{{"a", 341}, {"b", 341}, {"c", 342}};
    for (const int bound : {3, 5, 6, 7, 64, 100, 1000}) {
        INFO(bound);
        const auto sum = outboxd::sinks::targets::node_share(bound, three, "a") +
                         outboxd::sinks::targets::node_share(bound, three, "b") +
                         outboxd::sinks::targets::node_share(bound, three, "c");
        CHECK(sum == bound);
    }
    CHECK(outboxd::sinks::targets::node_share(6, three, "a") == 2);
    // Fewer slots than nodes: one each, so that no node's rows wait forever.
    CHECK(outboxd::sinks::targets::node_share(2, three, "c") == 1);
    CHECK(outboxd::sinks::targets::node_share(2, three, "a") == 1);
    // Shards nobody owns (a node just died) count for nobody: the others do not take them.
    const outboxd::sinks::ShardCounts half{{"a", 512}, {"b", 0}};
    CHECK(outboxd::sinks::targets::node_share(64, half, "a") == 32);
    CHECK(outboxd::sinks::targets::node_share(64, half, "b") == 0);
    CHECK(outboxd::sinks::targets::node_share(64, three, "nobody") == 0);
}

TEST_CASE("a 2xx JSON body is the task's result; anything else is none", "[unit][push]") {
    CHECK(push::result_of(answered(200, R"({"ok": true})"), 1024) == R"({"ok":true})");
    CHECK(push::result_of(answered(201, "[1, 2]"), 1024) == "[1,2]");
    CHECK_FALSE(push::result_of(answered(200, ""), 1024));             // no body
    CHECK_FALSE(push::result_of(answered(200, "OK"), 1024));           // not JSON
    CHECK_FALSE(push::result_of(answered(200, "null"), 1024));         // null is none
    CHECK_FALSE(push::result_of(answered(500, R"({"a":1})"), 1024));   // not a success
    CHECK_FALSE(push::result_of(answered(200, R"({"a":"x"})"), 8));    // over the limit
    CHECK_FALSE(push::result_of(answered(200, R"("\u0000")"), 1024));  // jsonb cannot hold it
    CHECK_FALSE(push::result_of(answered(200, std::string(100000, '[')), 1 << 20));  // too deep
    Exchange lost;
    lost.failure = "timed out";
    CHECK_FALSE(push::result_of(lost, 1024));
}
