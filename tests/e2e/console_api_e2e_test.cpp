// The web console's files at /ui and the API routes it reads: GET /v1/namespaces (counts and
// settings of every namespace) and GET /v1/workflows/{id} with its flags and ?all=true.

#include <cctype>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "e2e_cluster.hpp"

using namespace outboxd;
using nlohmann::json;
using test::E2eCluster;
using test::http_call;

namespace {

constexpr const char* kAdmin = "admin-token";

test::HttpResult call(std::uint16_t port, const std::string& method, const std::string& target,
                      const std::string& body = {}) {
    return http_call(port, method, target, body, std::string{kAdmin});
}

std::string read_file(const std::filesystem::path& path) {
    std::ifstream in{path, std::ios::binary};
    std::ostringstream out;
    out << in.rdbuf();
    return out.str();
}

// The response's head, lower-cased, for header checks.
std::string head_of(std::uint16_t port, const std::string& target) {
    auto answer =
        test::raw_http(port, "GET " + target + " HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    answer = answer.substr(0, answer.find("\r\n\r\n"));
    for (auto& c : answer) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return answer;
}

json namespace_entry(const json& list, const std::string& name) {
    for (const auto& entry : list["namespaces"]) {
        if (entry["namespace"] == name) return entry;
    }
    return nullptr;
}

}  // namespace

TEST_CASE("every node serves the console's files at /ui, open, with a strict policy",
          "[e2e][console]") {
    E2eCluster cluster{"console"};
    auto& node = cluster.start_node("node-1", {{"OUTBOXD_ADMIN_TOKEN", kAdmin}});
    const auto port = node.port;

    const auto redirect = head_of(port, "/ui");
    CHECK(redirect.starts_with("http/1.1 308"));
    CHECK(redirect.find("location: /ui/") != std::string::npos);

    const std::filesystem::path dir = std::string{OUTBOXD_SOURCE_DIR} + "/src/http/ui";
    REQUIRE(std::filesystem::exists(dir / "index.html"));
    const auto index = http_call(port, "GET", "/ui/");  // no token: the files are open
    REQUIRE(index.status == 200);
    CHECK(index.body == read_file(dir / "index.html"));
    const auto head = head_of(port, "/ui/");
    CHECK(head.find("content-type: text/html; charset=utf-8") != std::string::npos);
    CHECK(head.find("content-security-policy: default-src 'self'") != std::string::npos);
    CHECK(head.find("script-src 'self';") != std::string::npos);
    CHECK(head.find("frame-ancestors 'none'") != std::string::npos);
    CHECK(head.find("x-content-type-options: nosniff") != std::string::npos);

    // Every file of the directory, byte for byte, and nothing else.
    for (const auto& entry : std::filesystem::directory_iterator{dir}) {
        const auto name = entry.path().filename().string();
        const auto served = http_call(port, "GET", "/ui/" + name + "?v=1");
        CHECK(served.status == 200);
        CHECK(served.body == read_file(entry.path()));
    }
    CHECK(http_call(port, "GET", "/ui/no-such-file.js").status == 404);
    CHECK(http_call(port, "GET", "/ui/a/index.html").status == 404);
    CHECK(http_call(port, "GET", "/ui/..%2Fapi_router.cpp").status == 404);
    CHECK(http_call(port, "GET", "/ui/%2e%2e").status == 404);
    CHECK(http_call(port, "POST", "/ui/").status == 405);
    // Hostile names: a NUL byte and invalid UTF-8 are refused before any lookup (a guarded
    // node tells a client without its token nothing more); a 10,000-byte name is just not
    // there; nothing of it takes the node down.
    CHECK(http_call(port, "GET", "/ui/index.html%00.js").status == 401);
    CHECK(call(port, "GET", "/ui/index.html%00.js").status == 400);
    CHECK(call(port, "GET", "/ui/%ff%fe").status == 400);
    CHECK(http_call(port, "GET", "/ui/" + std::string(10000, 'a')).status == 404);
    CHECK(http_call(port, "GET", "/v1/workflows/x?all=" + std::string(10000, '1'), {},
                    std::string{kAdmin})
              .status == 400);
    CHECK(http_call(port, "GET", "/healthz").status == 200);
    // The API behind it still wants the token.
    CHECK(http_call(port, "GET", "/v1/namespaces").status == 401);
}

TEST_CASE("GET /v1/namespaces counts every namespace's rows, with its settings",
          "[e2e][console][api]") {
    E2eCluster cluster{"console-ns"};
    auto& node = cluster.start_node("node-1", {{"OUTBOXD_ADMIN_TOKEN", kAdmin}});
    const auto port = node.port;

    REQUIRE(
        call(port, "PUT", "/v1/namespaces/billing", R"({"max_in_flight":7,"weight":3})").status ==
        200);
    REQUIRE(call(port, "PUT", "/v1/namespaces/idle", R"({"keep_results":false})").status == 200);
    // No worker: rows stay pending. A few of each state by plain SQL.
    cluster.db.exec(R"SQL(
        INSERT INTO outbox (workflow_id, ordinal, activity_type, namespace)
        SELECT 'b-' || g, 0, 'charge', 'billing' FROM generate_series(1, 5) g;
        INSERT INTO outbox (workflow_id, ordinal, activity_type, namespace)
        SELECT 'm-' || g, 0, 'send', 'mail' FROM generate_series(1, 3) g;
        UPDATE outbox SET status = 'failed', finished_at = now(), last_error = 'x'
        WHERE workflow_id = 'm-1';
        UPDATE outbox SET status = 'done', finished_at = now() WHERE workflow_id = 'm-2';
        UPDATE outbox SET status = 'done', finished_at = now() - interval '2 minutes'
        WHERE workflow_id = 'b-1';)SQL");

    const auto listed = call(port, "GET", "/v1/namespaces");
    REQUIRE(listed.status == 200);
    const auto list = json::parse(listed.body);
    std::vector<std::string> names;
    for (const auto& entry : list["namespaces"]) names.push_back(entry["namespace"]);
    CHECK(names == std::vector<std::string>{"billing", "idle", "mail"});

    const auto billing = namespace_entry(list, "billing");
    CHECK(billing["pending"] == 4);
    CHECK(billing["claimed"] == 0);
    CHECK(billing["dead_letters"] == 0);
    CHECK(billing["finished_last_minute"]["done"] == 0);  // finished two minutes ago
    CHECK(billing["settings"] == json::parse(call(port, "GET", "/v1/namespaces/billing").body));
    CHECK(billing["settings"]["weight"] == 3);

    const auto mail = namespace_entry(list, "mail");
    CHECK(mail["pending"] == 1);
    CHECK(mail["dead_letters"] == 1);
    CHECK(mail["finished_last_minute"] == json{{"done", 1}, {"failed", 1}, {"cancelled", 0}});
    CHECK(mail["settings"]["configured"] == false);

    CHECK(namespace_entry(list, "idle")["settings"]["keep_results"] == false);
    CHECK(call(port, "POST", "/v1/namespaces").status == 405);
}

TEST_CASE(
    "GET /v1/workflows/{id} says whether it is paused or cancelled, and ?all=true lists "
    "finished rows too",
    "[e2e][console][api]") {
    E2eCluster cluster{"console-wf"};
    auto& node = cluster.start_node("node-1", {{"OUTBOXD_ADMIN_TOKEN", kAdmin}});
    const auto port = node.port;
    cluster.db.exec(R"SQL(
        INSERT INTO outbox (workflow_id, ordinal, activity_type)
        SELECT 'order-1', g, 'step' FROM generate_series(0, 2) g;
        UPDATE outbox SET status = 'done', finished_at = now()
        WHERE workflow_id = 'order-1' AND ordinal = 0;)SQL");

    auto shown = json::parse(call(port, "GET", "/v1/workflows/order-1").body);
    CHECK(shown["paused"] == false);
    CHECK(shown["cancelled"] == false);
    CHECK(shown["rows"].size() == 2);  // the live ones

    REQUIRE(call(port, "POST", "/v1/workflows/order-1/pause").status == 200);
    shown = json::parse(call(port, "GET", "/v1/workflows/order-1?all=true").body);
    CHECK(shown["paused"] == true);
    REQUIRE(shown["rows"].size() == 3);
    CHECK(shown["rows"][0]["dispatch_key"] == "order-1:0");
    CHECK(shown["rows"][0]["status"] == "done");

    REQUIRE(call(port, "POST", "/v1/workflows/order-1/cancel").status == 200);
    shown = json::parse(call(port, "GET", "/v1/workflows/order-1?all=true&limit=2").body);
    CHECK(shown["cancelled"] == true);
    CHECK(shown["rows"].size() == 2);
    CHECK(shown["rows"][1]["status"] == "cancelled");

    const auto bad = call(port, "GET", "/v1/workflows/order-1?all=yes");
    CHECK(bad.status == 400);
    CHECK(bad.body.find("all must be true or false") != std::string::npos);
}
