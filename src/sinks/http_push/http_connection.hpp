#pragma once

// One HTTP/1.1 connection to a push target, plain or TLS, carrying one request at a time and
// kept alive between them. Internal to src/push.
//
// Thread affinity: the executor it is made on (the node's loop). Owns its socket; the owner
// keeps a shared_ptr while an exchange runs (the handlers hold one too).

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>

#include "outboxd/config/defaults.hpp"
#include "outboxd/sinks/http_push/delivery.hpp"
#include "outboxd/sinks/http_push/target_check.hpp"

namespace outboxd::sinks::http_push::detail {

using Request = boost::beast::http::request<boost::beast::http::string_body>;

struct ConnectionLimits {
    std::size_t max_response_bytes =
        defaults::kHttpMaxResponseBytes;  // body; longer ends the connection
    std::size_t max_header_bytes = std::size_t{16} * 1024;
    std::size_t max_result_bytes = defaults::kMaxResultBytes;  // of a 2xx body kept as result
};

class HttpConnection {
public:
    // `reusable`: the connection may carry another request. `stale`: a kept-alive
    // connection failed before any byte of an answer (the peer closed it while idle): the
    // request may be sent again on a new connection.
    using Done = std::function<void(Exchange exchange, bool reusable, bool stale)>;

    virtual ~HttpConnection() = default;
    // Connects first when not connected (resolve, address policy, TCP, TLS), then sends
    // `request` and reads the answer, all within `timeout`. `done` runs on the executor,
    // exactly once.
    virtual void exchange(std::shared_ptr<const Request> request, std::chrono::milliseconds timeout,
                          Done done) = 0;
    // Ends the connection; an exchange in progress completes with a failure.
    virtual void close() = 0;
};

// `tls` is needed for https URLs and must outlive the connection.
[[nodiscard]] std::shared_ptr<HttpConnection> make_connection(
    const boost::asio::any_io_executor& ex, const TargetUrl& url, boost::asio::ssl::context* tls,
    const HostPolicy& policy, ConnectionLimits limits);

}  // namespace outboxd::sinks::http_push::detail
