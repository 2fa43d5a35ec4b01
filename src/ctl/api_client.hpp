#pragma once

// One blocking HTTP(S) request at a time to a node's API, for the operator CLI.

#include <chrono>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

namespace outboxd::ctl {

// Where the node is: parsed from --url (http://host:port or https://host:port, no path).
struct Endpoint {
    bool tls = false;
    std::string host;
    std::string port;
};

// A URL the CLI cannot use, or a node it cannot reach or understand; `what()` says which.
class ReachError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// The endpoint of `url`, or a ReachError naming what is wrong with it.
[[nodiscard]] Endpoint parse_endpoint(std::string_view url);

// Percent-encodes one path segment or query value (everything but unreserved characters).
[[nodiscard]] std::string encode_component(std::string_view text);

// `target` with `key=value` added to its query (value percent-encoded).
[[nodiscard]] std::string with_query(const std::string& target, std::string_view key,
                                     std::string_view value);

struct Reply {
    int status = 0;
    std::string body;
};

struct ClientOptions {
    std::optional<std::string> token;    // Authorization: Bearer
    std::optional<std::string> ca_file;  // https: trust this CA (else the system's)
    std::chrono::seconds timeout{30};
};

class ApiClient {
public:
    ApiClient(Endpoint endpoint, ClientOptions options);

    // Sends `method target` (a non-empty `body` as JSON) on a fresh connection. Any status is
    // a reply; a connection, TLS or timeout failure is a ReachError.
    [[nodiscard]] Reply call(std::string_view method, const std::string& target,
                             const std::string& body = {}) const;

private:
    Endpoint endpoint_;
    ClientOptions options_;
};

}  // namespace outboxd::ctl
