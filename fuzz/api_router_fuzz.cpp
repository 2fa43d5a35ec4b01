// The HTTP API router, on raw request bytes as they arrive on a connection: Beast's request
// parser (with the limits HttpSession sets) turns them into a request, which is routed by
// two routers, one open and one guarded by admin and worker tokens.
//
// The database is one nobody listens on (port 1 refuses at once): every route that needs
// SQL answers 503 quickly, so what is fuzzed is the parsing, routing, validation and error
// bodies in front of it, raw non-UTF-8 bytes in the target included.
//
// Oracles beyond "no crash, no sanitizer report":
//  - handle() never throws and answers exactly once, within a deadline;
//  - refusal(), which HttpSession asks before it reads a body, agrees with handle(): a
//    request it turns away is answered the same 401 or 403 by handle(), and one it lets
//    through is neither (else a client without the credential could still make the node
//    read a whole body);
//  - the status is one the API documents; a 500 means an exception nobody expected;
//  - only /ui redirects, to /ui/; only /metrics and the console's files (/ui/…) answer
//    something other than JSON;
//  - a JSON response is valid JSON, an object, and an error (any 4xx or 5xx but the
//    readiness probe's 503) carries error.code and error.message strings;
//  - no response echoes the database password unless the request itself held it.

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include <boost/asio/buffer.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket/rfc6455.hpp>
#include <nlohmann/json.hpp>
#include <prometheus/registry.h>
#include <spdlog/spdlog.h>

#include "fuzz_check.hpp"
#include "http/api_router.hpp"
#include "http/http_session.hpp"
#include "outboxd/engine/engine_directory.hpp"
#include "outboxd/metrics/node_metrics.hpp"
#include "outboxd/worker/worker_registry.hpp"

namespace {

namespace bhttp = boost::beast::http;
namespace http = outboxd::http;
namespace dispatch = outboxd::dispatch;
using outboxd::fuzz::broken;
using outboxd::fuzz::require;

constexpr std::string_view kPassword = "fuzz-db-secret";
// Nothing listens on port 1 of the loopback: a connection is refused at once.
const std::string kDatabaseUrl =
    "postgresql://postgres:" + std::string{kPassword} + "@127.0.0.1:1/outboxd?connect_timeout=1";
constexpr std::string_view kAdminToken = "admin-secret";
constexpr std::string_view kWorkerToken = "worker-secret";
// As HttpSession reads a request. The body limit is the node's max_body_bytes, set below the
// fuzzer's -max_len so that bodies past it occur: the session refuses those (413) unrouted.
constexpr std::size_t kHeaderLimit = std::size_t{64} * 1024;
constexpr std::size_t kBodyLimit = 4096;
// A refused connection answers within milliseconds; this only catches a lost answer.
constexpr auto kAnswerDeadline = std::chrono::seconds{20};

// What a node wires for its HTTP server, minus the server: nothing is started (no ticks, no
// sweeps), so the only database work is what a request asks for.
struct Node {
    Node()
        : metrics(prometheus_registry),
          engines(registry),
          open_auth({}, nullptr),
          guarded_auth({std::string{kAdminToken}, std::string{kWorkerToken}}, nullptr),
          open(ioc.get_executor(), services(open_auth), settings()),
          guarded(ioc.get_executor(), services(guarded_auth), settings()) {
        // As read from a control database without managed credentials.
        open_auth.replace_managed({}, std::chrono::system_clock::now());
        guarded_auth.replace_managed({}, std::chrono::system_clock::now());
        outboxd::engine::EngineSettings engine;
        engine.database_url = kDatabaseUrl;
        engine.member = {"fuzz-node", "fuzz-node/boot", "ws://127.0.0.1:8080/v1/workers",
                         std::chrono::milliseconds{5000}};
        engines.add(std::make_unique<outboxd::engine::OutboxEngine>(
            outboxd::engine::EngineContext{ioc.get_executor(), registry, metrics, engines},
            engine));
    }

    http::NodeServices services(outboxd::auth::Authenticator& auth) {
        return {engines, prometheus_registry, metrics, [] { return false; }, nullptr, auth, {}};
    }

    static http::ServerSettings settings() {
        http::ServerSettings s;
        s.max_body_bytes = kBodyLimit;
        return s;
    }

    prometheus::Registry prometheus_registry;
    outboxd::metrics::NodeMetrics metrics;
    boost::asio::io_context ioc{1};
    outboxd::worker::WorkerRegistry registry;
    outboxd::engine::EngineDirectory engines;
    outboxd::auth::Authenticator open_auth;
    outboxd::auth::Authenticator guarded_auth;
    http::ApiRouter open;
    http::ApiRouter guarded;
};

// Built once and never destroyed: the lane's thread and the loop live for the whole run, and
// libFuzzer exits without unwinding anyway.
Node& node() {
    static Node* const instance = new Node;
    return *instance;
}

// The request HttpSession would route, or nullopt when it never reaches the router (bytes
// Beast refuses or that end mid-message, or a WebSocket upgrade).
std::optional<http::ApiRequest> parse_request(std::string_view bytes) {
    bhttp::request_parser<bhttp::string_body> parser;
    parser.header_limit(kHeaderLimit);
    parser.body_limit(kBodyLimit);
    parser.eager(true);
    boost::beast::error_code ec;
    std::size_t offset = 0;
    while (!parser.is_done() && offset < bytes.size()) {
        const auto used =
            parser.put(boost::asio::buffer(bytes.data() + offset, bytes.size() - offset), ec);
        if (ec == bhttp::error::need_more) {
            ec = {};
            break;
        }
        if (ec || used == 0) break;
        offset += used;
    }
    // The connection ends after these bytes, as when a client half-closes: Beast settles a
    // message whose end is the end of the stream (put_eof wants at least one byte).
    if (!ec && !parser.is_done() && parser.got_some()) parser.put_eof(ec);
    if (ec || !parser.is_done()) return std::nullopt;
    auto request = parser.release();
    if (boost::beast::websocket::is_upgrade(request)) return std::nullopt;
    http::ApiRequest api;
    api.method = std::string{request.method_string()};
    api.target = std::string{request.target()};
    api.body = std::move(request.body());
    api.bearer = http::bearer_of(request[bhttp::field::authorization]);
    return api;
}

bool documented(int status) {
    switch (status) {
        case 200:
        case 201:  // POST /v1/credentials
        case 308:  // GET /ui -> /ui/
        case 400:
        case 401:
        case 403:
        case 404:
        case 405:
        case 409:  // POST /v1/credentials on an open node
        case 413:
        case 503:
            return true;
        default:
            return false;
    }
}

void check_response(const http::ApiResponse& response, const http::ApiRequest& request,
                    std::string_view bytes) {
    const auto context = request.method + " " + request.target + " -> " +
                         std::to_string(response.status) + " " + response.body;
    require(response.status != 500, "a request never meets an unexpected exception", context);
    require(documented(response.status), "the status is one the API documents", context);
    // A request may carry the password itself, in any part a response echoes (the fuzzer
    // learns it from the comparisons): only a response that got it from elsewhere leaks it.
    const bool asked = bytes.find(kPassword) != std::string_view::npos;
    require(asked || response.body.find(kPassword) == std::string::npos,
            "no response echoes the database password", context);
    // Empty segments collapse ("//metrics/" is /metrics); a target must start with '/'.
    const auto parsed = http::parse_target(request.target);
    const auto* target = std::get_if<http::ParsedTarget>(&parsed);
    const bool console = target && !target->segments.empty() && target->segments[0] == "ui";
    require(response.status != 308 || (console && target->segments.size() == 1),
            "only /ui redirects (to /ui/)", context);
    if (response.status == 308) {
        const auto location =
            std::find_if(response.headers.begin(), response.headers.end(),
                         [](const auto& header) { return header.first == "Location"; });
        require(location != response.headers.end() && location->second == "/ui/",
                "the /ui redirect names /ui/", context);
    }
    if (response.content_type != "application/json") {
        const bool metrics = target && target->segments == std::vector<std::string>{"metrics"};
        require(
            (response.status == 200 && (metrics || console)) || (response.status == 308 && console),
            "only /metrics and the console's files answer something other than JSON", context);
        return;
    }
    const auto body = nlohmann::json::parse(response.body, nullptr, /*allow_exceptions=*/false);
    require(!body.is_discarded(), "a JSON response parses as JSON", context);
    require(body.is_object(), "a JSON response is an object", context);
    // /readyz answers 503 with its probe body, not an error: a load balancer reads it so.
    const bool readiness = body.contains("ready") && body.contains("registered");
    if (response.status >= 400 && !readiness) {
        const auto error = body.find("error");
        require(error != body.end() && error->is_object() && error->contains("code") &&
                    (*error)["code"].is_string() && error->contains("message") &&
                    (*error)["message"].is_string(),
                "an error response carries error.code and error.message strings", context);
    }
}

void route(http::ApiRouter& router, const http::ApiRequest& request, std::string_view bytes) {
    auto& ioc = node().ioc;
    std::optional<http::ApiResponse> response;
    int answers = 0;
    try {
        router.handle(request, [&](http::ApiResponse r) {
            ++answers;
            response = std::move(r);
        });
    } catch (const std::exception& error) {
        broken("handle() never throws",
               request.method + " " + request.target + ": " + error.what());
    }
    // Answers from the database lane are posted to the loop: run it until one arrives.
    const auto guard = boost::asio::make_work_guard(ioc);
    const auto deadline = std::chrono::steady_clock::now() + kAnswerDeadline;
    while (answers == 0) {
        require(std::chrono::steady_clock::now() < deadline, "every request is answered",
                request.method + " " + request.target);
        ioc.restart();
        ioc.run_one_for(std::chrono::milliseconds{100});
    }
    ioc.restart();
    ioc.poll();
    require(answers == 1, "every request is answered exactly once", request.target);
    check_response(*response, request, bytes);
    // handle() only ever sees requests that are not upgrades (a session hands those over).
    // The fuzzer's credentials reach every namespace ('*'), so a 401 or 403 can only come
    // from the route's gate, which refusal() decides alike from the request line and headers.
    const auto refused =
        router.refusal(request.method, request.target, request.bearer, /*upgrade=*/false);
    const bool gate = response->status == 401 || response->status == 403;
    require(refused.has_value() == gate && (!refused || refused->status == response->status),
            "refusal() stops a request before its body exactly when handle() refuses it",
            request.method + " " + request.target +
                " refused=" + (refused ? std::to_string(refused->status) : std::string{"no"}) +
                " -> " + std::to_string(response->status));
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
    spdlog::set_level(spdlog::level::off);
    node();
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view bytes{reinterpret_cast<const char*>(data), size};
    const auto request = parse_request(bytes);
    if (!request) return 0;
    route(node().open, *request, bytes);
    route(node().guarded, *request, bytes);
    return 0;
}
