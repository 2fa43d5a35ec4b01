#pragma once

// The body of PUT /v1/http-targets/{name} (README, "HTTP push") into a target, checked by
// http_push::check_target against the node's host policy. Never throws: a bad body yields the
// field at fault and why.

#include <string>
#include <variant>

#include "outboxd/sinks/http_push/target_check.hpp"
#include "outboxd/store/http_target.hpp"

namespace outboxd::http {

namespace http_push = sinks::http_push;

struct TargetBodyError {
    std::string code;   // invalid_json | invalid_request
    std::string field;  // empty when the body as a whole is wrong
    std::string message;
};

[[nodiscard]] std::variant<store::HttpTargetSettings, TargetBodyError> parse_target_request(
    const std::string& name, const std::string& body, const http_push::HostPolicy& policy);

}  // namespace outboxd::http
