#include "outboxd/sinks/http_push/http_kind.hpp"

#include <array>

#include <boost/asio/ssl/context.hpp>

#include "outboxd/util/untrusted_text.hpp"
#include "target_channel.hpp"

namespace outboxd::sinks::http_push {
namespace {

// The TLS context of an https target: the system's trust store, or the target's CA file.
std::unique_ptr<boost::asio::ssl::context> tls_context(const store::TargetSettings& target) {
    auto context =
        std::make_unique<boost::asio::ssl::context>(boost::asio::ssl::context::tls_client);
    context->set_options(boost::asio::ssl::context::default_workarounds |
                         boost::asio::ssl::context::no_sslv2 | boost::asio::ssl::context::no_sslv3 |
                         boost::asio::ssl::context::no_tlsv1 |
                         boost::asio::ssl::context::no_tlsv1_1);
    if (target.ca_file) {
        context->load_verify_file(*target.ca_file);  // throws when unreadable
    } else {
        context->set_default_verify_paths();
    }
    return context;
}

constexpr std::array<targets::OptionSpec, 1> kOptions{
    targets::OptionSpec{"standard_webhooks", true}};

class HttpKind final : public targets::DestinationKind {
public:
    [[nodiscard]] std::string_view name() const override { return "http"; }
    [[nodiscard]] std::span<const targets::OptionSpec> options() const override { return kOptions; }
    [[nodiscard]] std::span<const std::string_view> credentials() const override { return {}; }
    [[nodiscard]] std::string_view default_body() const override { return "task"; }
    [[nodiscard]] std::optional<FieldProblem> check(const store::TargetSettings& target,
                                                    const HostPolicy& policy) const override {
        return check_target(target, policy);
    }
    [[nodiscard]] std::shared_ptr<targets::Channel> open(
        const store::TargetSettings& target, targets::ChannelContext context) const override {
        const auto url = parse_target_url(target.url);
        if (!url) throw std::runtime_error("its URL cannot be parsed");  // checked: never
        std::unique_ptr<boost::asio::ssl::context> tls;
        if (url->tls) {
            try {
                tls = tls_context(target);
            } catch (const std::exception& error) {
                throw std::runtime_error("cannot load its TLS trust (" +
                                         util::sanitize_text(error.what(), 200) + ")");
            }
        }
        auto& metrics = context.metrics;
        const prometheus::Labels labels{{"database", context.database}, {"target", target.name}};
        detail::TargetMetrics target_metrics{
            &metrics.http_requests_total, context.database,
            &metrics.http_request_seconds.Add(labels, metrics::kHttpSecondsBuckets),
            &metrics.http_inflight.Add(labels)};
        return std::make_shared<detail::TargetChannel>(
            context.loop, target, *url, std::move(tls), context.policy,
            detail::ConnectionLimits{context.max_response_bytes, std::size_t{16} * 1024,
                                     context.max_result_bytes},
            target_metrics, std::move(context.answers), std::move(context.wall_clock));
    }
    [[nodiscard]] std::string shown_url(std::string_view url) const override {
        return url_without_query(url);
    }
};

}  // namespace

const targets::DestinationKind& http_kind() {
    static const HttpKind kind;
    return kind;
}

}  // namespace outboxd::sinks::http_push
