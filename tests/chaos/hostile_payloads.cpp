#include "hostile_payloads.hpp"

#include <random>

#include "ws_frame.hpp"

namespace outboxd::chaos {

namespace {

using namespace std::string_literals;

constexpr std::size_t kDeepNesting = 100000;
constexpr std::size_t kOpenBrackets = 30000;
constexpr std::size_t kHugeHeaderBytes = 1 << 20;
constexpr std::uint32_t kSeed = 20261201;

std::string random_bytes(std::size_t count, std::uint32_t seed) {
    std::mt19937 draw{seed};
    std::string out(count, '\0');
    for (auto& byte : out) byte = static_cast<char>(draw() & 0xff);
    return out;
}

std::string get(const std::string& target) {
    return "GET " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
}

std::string post(const std::string& target, const std::string& body) {
    return "POST " + target +
           " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
           "Content-Length: " +
           std::to_string(body.size()) + "\r\n\r\n" + body;
}

std::string deep_object(std::size_t depth) {
    std::string out;
    out.reserve(depth * 7);
    for (std::size_t i = 0; i < depth; ++i) out += "{\"a\":";
    out += "1";
    out.append(depth, '}');
    return out;
}

std::string text(const std::string& payload) { return ws_frame(payload); }

WsFrameShape shaped(std::uint8_t first_byte, bool masked = true) {
    return {first_byte, masked, std::nullopt};
}

// A valid hello for an activity type no row has: the session lives, and gets no task.
const std::string kIdleHello = R"({"type":"hello","worker_id":"hostile-idle",)"
                               R"("activity_types":["hostile-none"],"max_in_flight":4})";

}  // namespace

std::string nested(char open_char, char close_char, std::size_t depth, bool closed) {
    std::string out(depth, open_char);
    if (closed) out.append(depth, close_char);
    return out;
}

std::vector<HostileBytes> hostile_http_payloads() {
    std::vector<HostileBytes> out{
        {"random-bytes", random_bytes(8192, kSeed)},
        {"tls-client-hello",
         "\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03"s + random_bytes(300, kSeed + 1)},
        {"blank-lines", "\r\n\r\n\r\n\r\n"},
        {"unknown-method", "GARBAGE / HTTP/1.1\r\nHost: x\r\n\r\n"},
        {"bad-version", "GET / HTTP/9.9\r\nHost: x\r\n\r\n"},
        {"http-0.9", "GET /\r\n\r\n"},
        {"nul-bytes", "GET /\0 HTTP/1.1\r\nHost: \0\r\n\r\n"s},
        {"bare-lf", "GET /healthz HTTP/1.1\nHost: x\n\n"},
        {"partial-request", "GET /healthz HTTP/1.1\r\nHost:"},
        {"huge-header-value", "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: " +
                                  std::string(kHugeHeaderBytes, 'a') + "\r\n\r\n"},
        {"huge-header-name",
         "GET /healthz HTTP/1.1\r\nHost: x\r\n" + std::string(65536, 'N') + ": v\r\n\r\n"},
        {"content-length-overflow",
         "POST /v1/outbox HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999999999999\r\n\r\n{"},
        {"content-length-negative",
         "POST /v1/outbox HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n{"},
        {"content-length-twice",
         "POST /v1/outbox HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nContent-Length: "
         "40\r\n\r\n{}"},
        {"chunked-garbage",
         "POST /v1/outbox HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: "
         "chunked\r\n\r\nZZZZ\r\nabc\r\n0\r\n\r\n"},
        {"chunk-size-overflow",
         "POST /v1/outbox HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: "
         "chunked\r\n\r\nfffffffffffffffffff\r\n{"},
        {"length-and-chunked",
         "POST /v1/outbox HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: "
         "chunked\r\n\r\n0\r\n\r\n"},
        {"body-open-brackets", post("/v1/outbox", nested('[', ']', kOpenBrackets, false))},
        {"body-deep-array",
         post("/v1/outbox", "{\"rows\":" + nested('[', ']', kDeepNesting, true) + "}")},
        {"body-deep-object", post("/v1/outbox", deep_object(kDeepNesting))},
        {"body-invalid-utf8", post("/v1/outbox",
                                   "{\"rows\":[{\"workflow_id\":\"\xc3\x28\",\"ordinal\":0,"
                                   "\"activity_type\":\"\xff\"}]}")},
        {"body-nul-escapes",
         post("/v1/outbox",
              R"({"rows":[{"workflow_id":"a\u0000b","ordinal":0,"activity_type":"x\u0000"}]})")},
        {"body-lone-surrogate",
         post("/v1/outbox", R"({"rows":[{"workflow_id":"\ud800","ordinal":0}]})")},
        {"body-huge-numbers",
         post("/v1/outbox",
              R"({"rows":[{"workflow_id":"hostile","ordinal":1e400,"activity_type":""}]})")},
        {"body-not-json", post("/v1/outbox", random_bytes(4096, kSeed + 2))},
        {"namespace-deep-body", "PUT /v1/namespaces/%FF HTTP/1.1\r\nHost: x\r\nContent-Length: " +
                                    std::to_string(2 * kDeepNesting) + "\r\n\r\n" +
                                    nested('[', ']', kDeepNesting, true)},
        {"ws-upgrade-bad-version",
         "GET /v1/workers HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
         "Sec-WebSocket-Version: 99\r\n\r\n"},
    };
    // Targets with invalid UTF-8, raw and percent-encoded, and other malformed URLs.
    const std::vector<std::pair<std::string, std::string>> targets{
        {"url-invalid-utf8", "/\xc3"},
        {"url-invalid-utf8-row", "/v1/outbox/\xc3\x28"},
        {"url-escaped-invalid-utf8-row", "/v1/outbox/%C3%28"},
        {"url-truncated-escape", "/v1/outbox/%"},
        {"url-bad-escape", "/v1/outbox/%zz"},
        {"url-long-key", "/v1/outbox/" + std::string(16384, 'k')},
        {"url-bad-query-values", "/v1/dead-letters?namespace=%FF%FE&limit=-1"},
        {"url-limit-overflow", "/v1/dead-letters?limit=99999999999999999999"},
        {"url-escaped-invalid-utf8-namespace", "/v1/namespaces/%FF%FE"},
        {"url-bad-query", "/v1/cluster?%%%"},
        {"url-invalid-utf8-query", "/metrics?\xff"},
        {"url-invalid-utf8-token", "/v1/workers?token=\xc3"},
        {"url-dot-segments", "//../../etc/passwd"},
        {"url-asterisk", "*"},
        {"url-absolute-broken", "http://[::1"},
    };
    for (const auto& [name, target] : targets) out.push_back({name, get(target)});
    // Writes that name no workflow of the load (which are chaos-<n>): invalid UTF-8 ids.
    for (const auto* target : {"/v1/workflows/%FF%FE/pause", "/v1/workflows/\xc3\x28/resume",
                               "/v1/workflows/%C3%28/cancel", "/v1/dead-letters/%FF/requeue"}) {
        out.push_back({std::string{"post-target-"} + target, post(target, "")});
    }
    return out;
}

std::vector<HostileFrames> hostile_ws_payloads() {
    const auto binary = shaped(kWsFin | kWsBinary);
    return {
        {"hello-wrong-types",
         {text(R"({"type":"hello","worker_id":123,"activity_types":"noop","max_in_flight":-5})")}},
        {"hello-huge-numbers",
         {text(R"({"type":"hello","worker_id":"h","activity_types":["hostile-none"],)"
               R"("max_in_flight":1e300})")}},
        {"hello-overflow",
         {text(R"({"type":"hello","worker_id":"h","activity_types":["hostile-none"],)"
               R"("max_in_flight":9223372036854775808})")}},
        {"hello-null-fields",
         {text(R"({"type":"hello","worker_id":null,"namespaces":[null,1,{}],)"
               R"("task_queue":"","activity_types":[]})")}},
        {"hello-invalid-utf8",
         {text("{\"type\":\"hello\",\"worker_id\":\"\xc3\x28\",\"activity_types\":[\"\xff\"]}")}},
        {"hello-bad-escapes",
         {text(R"({"type":"hello","worker_id":"\ud800",)"
               R"("activity_types":["a\u0000b"],"node":"\u0000"})")}},
        {"hello-long-id",
         {text(R"({"type":"hello","worker_id":")" + std::string(500000, 'w') +
               R"(","activity_types":["hostile-none"]})")}},
        {"deep-array", {text(nested('[', ']', kDeepNesting, true))}},
        {"open-brackets", {text(nested('[', ']', kOpenBrackets, false))}},
        {"deep-object", {text(deep_object(kDeepNesting))}},
        {"binary-garbage", {ws_frame(random_bytes(2048, kSeed + 3), binary)}},
        {"reserved-opcode", {ws_frame("x", shaped(kWsFin | 0x3))}},
        {"reserved-bits", {ws_frame(kIdleHello, shaped(0xf0 | kWsText))}},
        {"unmasked", {ws_frame(kIdleHello, shaped(kWsFin | kWsText, false))}},
        {"length-lie", {ws_frame("{", WsFrameShape{kWsFin | kWsText, true, 1ULL << 63})}},
        {"oversize-frame", {text(std::string(2 << 20, ' '))}},
        {"big-ping", {ws_frame(std::string(200, 'p'), shaped(kWsFin | kWsPing))}},
        {"fragmented-ping", {ws_frame("p", shaped(kWsPing))}},
        {"orphan-continuation", {ws_frame("{}", shaped(kWsFin))}},
        {"garbage-after-hello",
         {text(kIdleHello), text(R"({"type":"complete","task_id":"1.1"})"),
          text(R"({"type":"complete","task_id":"-1.-1","result":)" + nested('[', ']', 10000, true) +
               "}"),
          text(R"({"type":"fail","task_id":"99999999999999999999999.1",)"
               R"("error":5,"retryable":"yes"})"),
          text(R"({"type":"credit","max_in_flight":-1})"),
          text(R"({"type":"credit","max_in_flight":1e20})"), text(R"({"type":"credit"})"),
          text(R"({"type":"batch","frames":[{"type":"complete","task_id":"x"},)"
               R"(5,null,{"type":"hello"}]})"),
          text(R"({"type":"batch","frames":)" + nested('[', ']', 50000, true) + "}"),
          text(R"({"type":"batch","frames":"x"})"), text(R"({"type":"batch","frames":[]})"),
          text(kIdleHello), text(R"({"type":"no-such-type"})"), text("[]"), text("5"),
          text("\"s\""), text("null"), text("{}"), text(nested('{', '}', 1, false))}},
    };
}

}  // namespace outboxd::chaos
