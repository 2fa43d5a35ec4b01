#pragma once

// Transport-neutral request and response of the HTTP API, so the routes need no Beast.

#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "outboxd/store/outbox_row.hpp"

namespace outboxd::http {

struct ApiRequest {
    std::string method;  // "GET", "POST", ...
    std::string target;  // path and query, as received
    std::string body;
    std::optional<std::string> bearer;  // token from Authorization: Bearer
};

struct ApiResponse {
    using Headers = std::vector<std::pair<std::string, std::string>>;
    ApiResponse() = default;
    ApiResponse(int status, std::string content_type, std::string body, Headers headers = {})
        : status(status),
          content_type(std::move(content_type)),
          body(std::move(body)),
          headers(std::move(headers)) {}

    int status = 200;
    std::string content_type = "application/json";
    std::string body;
    Headers headers;  // beyond Content-Type
};

using Respond = std::function<void(ApiResponse)>;

// {"error":{"code":"…","message":"…"}} (README, "HTTP API"), plus optional extra members.
[[nodiscard]] ApiResponse error_response(int status, std::string_view code,
                                         std::string_view message);

// Splits a target into its decoded path segments and decoded query parameters, or says why
// it cannot: a target that is not a path starting with '/', malformed percent-encoding, or a
// decoded segment or parameter that is not valid UTF-8 or holds a NUL byte (names from a URL
// end up in SQL parameters and responses). A bad parameter value is named by its parameter.
struct ParsedTarget {
    std::vector<std::string> segments;         // "/v1/outbox/a%2Fb" -> {"v1", "outbox", "a/b"}
    std::map<std::string, std::string> query;  // a parameter given twice: its last value
    std::set<std::string> repeated;            // the parameters given more than once
};
struct TargetError {
    std::string message;
};
[[nodiscard]] std::variant<ParsedTarget, TargetError> parse_target(std::string_view target);

// JSON text of `value` that never throws: invalid UTF-8 in a string becomes U+FFFD.
[[nodiscard]] std::string json_text(const nlohmann::json& value);
// A text that may be absent, and an instant that may be absent (RFC 3339), as JSON (null).
[[nodiscard]] nlohmann::json optional_json(const std::optional<std::string>& value);
[[nodiscard]] nlohmann::json optional_time(const std::optional<store::TimePoint>& value);

}  // namespace outboxd::http
