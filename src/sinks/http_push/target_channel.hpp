#pragma once

// One HTTP push target as a worker of the registry: each task handed to it is POSTed to the
// target's URL over a pool of kept-alive connections, and the end of the request is
// answered to dispatch like a worker's complete or fail. Internal to src/push.
//
// Thread affinity: the node's loop. The registry's credit bounds what it is handed (its
// share of the target's max_in_flight), and so the number of connections it opens.

#include <chrono>
#include <cstdint>
#include <ctime>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/ssl/context.hpp>
#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>

#include "http_connection.hpp"
#include "outboxd/sinks/targets/destination.hpp"
#include "outboxd/store/target.hpp"

namespace outboxd::sinks::http_push::detail {

using AnswerSink = targets::Answers;

struct TargetMetrics {
    prometheus::Family<prometheus::Counter>* requests = nullptr;  // {database, target, code_class}
    std::string database = "default";
    prometheus::Histogram* seconds = nullptr;
    prometheus::Gauge* inflight = nullptr;
};

class TargetChannel final : public targets::Channel,
                            public std::enable_shared_from_this<TargetChannel> {
public:
    using WallClock = std::function<std::time_t()>;

    // `tls` is the target's TLS context (https only); `policy` must outlive the channel.
    TargetChannel(boost::asio::any_io_executor ex, store::TargetSettings settings, TargetUrl url,
                  std::unique_ptr<boost::asio::ssl::context> tls, const HostPolicy& policy,
                  ConnectionLimits limits, TargetMetrics metrics, AnswerSink sink,
                  WallClock wall_clock);
    ~TargetChannel() override;

    [[nodiscard]] std::optional<std::string> send_task(const sinks::Task& task) override;
    // Closes every connection: requests in progress end as failures (retried).
    void close(std::string_view reason) override;

    [[nodiscard]] const store::TargetSettings& settings() const { return settings_; }
    [[nodiscard]] std::size_t in_flight() const override { return in_flight_; }
    // What happened since the last call: the latest error, and whether any request got a 2xx.
    [[nodiscard]] store::TargetReport take_report() override;
    [[nodiscard]] std::optional<std::string> last_error() const override { return last_error_; }

private:
    struct Delivery {
        std::string task_id;
        std::shared_ptr<const Request> request;
        std::chrono::steady_clock::time_point started;
    };
    struct Idle {
        std::shared_ptr<HttpConnection> connection;
        std::chrono::steady_clock::time_point since;
    };

    std::shared_ptr<const Request> request_for(const sinks::Task& task) const;
    void deliver(Delivery delivery, bool may_resend);
    void finished(const Delivery& delivery, const Exchange& exchange);
    prometheus::Counter& requests_counter(const std::string& code_class);

    boost::asio::any_io_executor ex_;
    store::TargetSettings settings_;
    TargetUrl url_;
    std::unique_ptr<boost::asio::ssl::context> tls_;
    const HostPolicy& policy_;
    ConnectionLimits limits_;
    TargetMetrics metrics_;
    AnswerSink sink_;
    WallClock wall_clock_;
    std::vector<Idle> idle_;
    // Connections carrying a request now (closed with the channel).
    std::unordered_map<const HttpConnection*, std::weak_ptr<HttpConnection>> busy_;
    std::size_t in_flight_ = 0;
    std::map<std::string, prometheus::Counter*> counters_;
    std::optional<std::string> last_error_;
    std::optional<std::string> unreported_error_;
    bool unreported_success_ = false;
    bool closed_ = false;
    bool standard_webhooks_ = false;  // also send Standard Webhooks' headers
};

}  // namespace outboxd::sinks::http_push::detail
