#pragma once

// A minimal blocking HTTP/1.1 client for the driver: one request per connection to a node
// of the benchmark (GET /metrics, PUT /v1/namespaces/{ns}). Driver thread; each request
// has kHttpTimeout to finish. Throws boost::system::system_error when the node cannot be
// reached or does not answer in time; any status is a reply, not an error.

#include <chrono>
#include <string>
#include <string_view>

namespace outboxd::bench {

struct HttpReply {
    int status = 0;
    std::string body;
};

inline constexpr std::chrono::seconds kHttpTimeout{5};

// `http_url` is "http://host:port"; `method` a verb such as "GET" or "PUT"; a non-empty
// `body` is sent as application/json.
[[nodiscard]] HttpReply http_request(const std::string& http_url, std::string_view method,
                                     const std::string& target, const std::string& body = {});

}  // namespace outboxd::bench
