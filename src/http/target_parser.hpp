#pragma once

// The body of PUT /v1/http-targets/{name} (README, "HTTP push") into a target, checked by
// http_push::check_target against the node's host policy. Never throws: a bad body yields the
// field at fault and why. A body without "signing_secret" keeps the stored one; with
// "signing_secret": null it clears it.

#include <string>
#include <string_view>
#include <variant>

#include "outboxd/sinks/http_push/target_check.hpp"
#include "outboxd/store/http_target.hpp"

namespace outboxd::http {

namespace http_push = sinks::http_push;

// What GET shows in place of each header value; refused as a value in a PUT.
inline constexpr std::string_view kRedactedValue = "<redacted>";

struct TargetBodyError {
    std::string code;   // invalid_json | invalid_request
    std::string field;  // empty when the body as a whole is wrong
    std::string message;
};

struct TargetRequest {
    store::HttpTargetSettings target;
    // keep: the body names no signing secret (target.signing_secret is then empty).
    store::SecretUpdate signing_secret = store::SecretUpdate::replace;
};

[[nodiscard]] std::variant<TargetRequest, TargetBodyError> parse_target_request(
    const std::string& name, const std::string& body, const http_push::HostPolicy& policy);

}  // namespace outboxd::http
