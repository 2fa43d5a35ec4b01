#include "target_channel.hpp"

#include <boost/beast/http/field.hpp>
#include <boost/beast/http/verb.hpp>

#include "outboxd/sinks/task_headers.hpp"
#include "outboxd/worker/protocol.hpp"

namespace outboxd::sinks::http_push::detail {
namespace {

namespace http = boost::beast::http;
using Clock = std::chrono::steady_clock;

// A kept-alive connection idle for longer is closed rather than reused: servers close idle
// connections themselves after a while, and a request sent into one that just closed costs
// a round trip before it is sent again.
constexpr auto kIdleReuse = std::chrono::seconds{30};
constexpr std::string_view kUserAgent = "outboxd";

}  // namespace

TargetChannel::TargetChannel(boost::asio::any_io_executor ex, store::TargetSettings settings,
                             TargetUrl url, std::unique_ptr<boost::asio::ssl::context> tls,
                             const HostPolicy& policy, ConnectionLimits limits,
                             TargetMetrics metrics, AnswerSink sink, WallClock wall_clock)
    : ex_(std::move(ex)),
      settings_(std::move(settings)),
      url_(std::move(url)),
      tls_(std::move(tls)),
      policy_(policy),
      limits_(limits),
      metrics_(std::move(metrics)),
      sink_(std::move(sink)),
      wall_clock_(std::move(wall_clock)),
      standard_webhooks_(settings_.options.contains("standard_webhooks") &&
                         settings_.options.at("standard_webhooks") == "true") {}

TargetChannel::~TargetChannel() {
    closed_ = true;
    for (auto& idle : idle_) idle.connection->close();
    for (auto& [key, weak] : busy_) {
        if (auto busy = weak.lock()) busy->close();
    }
}

std::shared_ptr<const Request> TargetChannel::request_for(const sinks::Task& task) const {
    auto request = std::make_shared<Request>(http::verb::post, url_.target, 11);
    request->set(http::field::host, url_.host_header);
    request->set(http::field::user_agent, kUserAgent);
    request->set(http::field::content_type, "application/json");
    for (const auto& [name, value] : task_headers(task)) request->set(name, value);
    for (const auto& [name, value] : settings_.headers) request->set(name, value);
    request->body() = worker::protocol::encode(task);
    const auto now = wall_clock_();
    if (settings_.signing_secret) {
        request->set("Outboxd-Signature",
                     signature(*settings_.signing_secret, now, request->body()));
    }
    // Standard Webhooks (standardwebhooks.com): its headers beside outboxd's own, so that
    // receivers can verify with that ecosystem's libraries.
    if (standard_webhooks_) {
        const auto id = header_safe(task.dispatch_key);
        request->set("webhook-id", id);
        request->set("webhook-timestamp", std::to_string(now));
        if (settings_.signing_secret) {
            request->set(
                "webhook-signature",
                standard_webhooks_signature(*settings_.signing_secret, id, now, request->body()));
        }
    }
    request->keep_alive(true);
    request->prepare_payload();
    return request;
}

std::optional<std::string> TargetChannel::send_task(const sinks::Task& task) {
    if (closed_) return std::string{"the HTTP target was removed"};
    ++in_flight_;
    if (metrics_.inflight) metrics_.inflight->Increment();
    deliver({task.task_id, request_for(task), Clock::now()}, true);
    return std::nullopt;
}

void TargetChannel::deliver(Delivery delivery, bool may_resend) {
    std::shared_ptr<HttpConnection> connection;
    const auto now = Clock::now();
    while (!idle_.empty() && !connection) {
        auto idle = std::move(idle_.back());
        idle_.pop_back();
        if (now - idle.since < kIdleReuse) {
            connection = std::move(idle.connection);
        } else {
            idle.connection->close();
        }
    }
    if (!connection) connection = make_connection(ex_, url_, tls_.get(), policy_, limits_);
    busy_.emplace(connection.get(), connection);
    auto request = delivery.request;
    connection->exchange(std::move(request), std::chrono::milliseconds{settings_.timeout_ms},
                         [weak = weak_from_this(), connection, delivery = std::move(delivery),
                          may_resend](const Exchange& exchange, bool reusable, bool stale) mutable {
                             const auto self = weak.lock();
                             if (!self) return;
                             self->busy_.erase(connection.get());
                             if (stale && may_resend && !self->closed_) {
                                 // The peer closed the kept-alive connection before this request
                                 // reached it: once more, on a new connection.
                                 return self->deliver(std::move(delivery), false);
                             }
                             if (reusable && !self->closed_) {
                                 self->idle_.push_back({std::move(connection), Clock::now()});
                             }
                             self->finished(delivery, exchange);
                         });
}

prometheus::Counter& TargetChannel::requests_counter(const std::string& code_class) {
    auto& counter = counters_[code_class];
    if (!counter) {
        counter = &metrics_.requests->Add({{"database", metrics_.database},
                                           {"target", settings_.name},
                                           {"code_class", code_class}});
    }
    return *counter;
}

void TargetChannel::finished(const Delivery& delivery, const Exchange& exchange) {
    --in_flight_;
    if (metrics_.inflight) metrics_.inflight->Decrement();
    if (metrics_.requests) requests_counter(code_class(exchange)).Increment();
    if (metrics_.seconds) {
        metrics_.seconds->Observe(
            std::chrono::duration<double>(Clock::now() - delivery.started).count());
    }
    const auto verdict = judge(exchange, wall_clock_());
    switch (verdict.kind) {
        case Verdict::Kind::done:
            unreported_success_ = true;
            sink_.done(delivery.task_id, result_of(exchange, limits_.max_result_bytes));
            return;
        case Verdict::Kind::retry:
        case Verdict::Kind::dead_letter:
            last_error_ = verdict.error;
            unreported_error_ = verdict.error;
            sink_.failed(delivery.task_id, verdict.error, verdict.kind == Verdict::Kind::retry,
                         verdict.min_delay);
            return;
    }
}

void TargetChannel::close(std::string_view) {
    closed_ = true;
    for (auto& idle : idle_) idle.connection->close();
    idle_.clear();
    for (auto& [key, weak] : busy_) {
        if (auto busy = weak.lock()) busy->close();
    }
    busy_.clear();
}

store::TargetReport TargetChannel::take_report() {
    store::TargetReport report{settings_.name, std::exchange(unreported_error_, std::nullopt),
                               std::exchange(unreported_success_, false)};
    return report;
}

}  // namespace outboxd::sinks::http_push::detail
