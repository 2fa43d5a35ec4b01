#pragma once

// The body of PUT /v1/targets/{name} (README, "Targets") into a target of its kind, checked
// by targets::check_target against the node's host policy. Never throws: a bad body yields the
// field at fault and why. A body without "signing_secret" keeps the stored one; with
// "signing_secret": null it clears it; so for each of the kind's credentials.

#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include "outboxd/sinks/targets/destination.hpp"
#include "outboxd/store/target.hpp"

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
    store::TargetSettings target;
    // keep: the body names no signing secret (target.signing_secret is then empty).
    store::SecretUpdate signing_secret = store::SecretUpdate::replace;
    store::KeptCredentials kept_credentials;  // the kind's credentials the body left out
};

// `only_kind`: the route takes targets of that kind only (/v1/http-targets: "http").
[[nodiscard]] std::variant<TargetRequest, TargetBodyError> parse_target_request(
    const std::string& name, const std::string& body, const sinks::targets::HostPolicy& policy,
    std::optional<std::string_view> only_kind = std::nullopt);

}  // namespace outboxd::http
