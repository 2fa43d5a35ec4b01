#include "outboxd/sinks/amqp/amqp_kind.hpp"

#include <array>

#include "amqp_channel.hpp"
#include "amqp_url.hpp"
#include "outboxd/sinks/broker/broker_rules.hpp"
#include "outboxd/sinks/task_headers.hpp"

namespace outboxd::sinks::amqp {

using broker::option;
using targets::FieldProblem;
using targets::HostPolicy;
namespace {

// A template may be longer than what it expands to is allowed to be ("{workflow_id}" is
// checked when expanded), but not without bound.
constexpr std::size_t kMaxTemplateBytes = 1024;

constexpr std::array<targets::OptionSpec, 4> kOptions{
    targets::OptionSpec{"exchange"}, targets::OptionSpec{"routing_key"},
    targets::OptionSpec{"body"}, targets::OptionSpec{"user"}};
constexpr std::array<std::string_view, 1> kCredentials{"password"};

std::optional<FieldProblem> problem(std::string field, std::string message) {
    return FieldProblem{std::move(field), std::move(message)};
}

// A template and what it makes of a task whose fields are all "x": the literal part is what
// the target decides, and must already be a valid name.
std::optional<FieldProblem> template_field_problem(
    const std::string& field, const std::string& text,
    std::optional<std::string> (*name_problem)(std::string_view)) {
    if (text.size() > kMaxTemplateBytes) {
        return problem(field,
                       field + " is longer than " + std::to_string(kMaxTemplateBytes) + " bytes");
    }
    if (auto why = template_problem(text)) return problem(field, field + ": " + *why);
    Task sample;
    sample.namespace_name = sample.task_queue = sample.activity_type = sample.workflow_id = "x";
    if (auto why = name_problem(expand_template(text, sample))) {
        return problem(field, field + " " + *why);
    }
    return std::nullopt;
}

class AmqpKind final : public targets::DestinationKind {
public:
    [[nodiscard]] std::string_view name() const override { return "amqp"; }
    [[nodiscard]] std::span<const targets::OptionSpec> options() const override { return kOptions; }
    [[nodiscard]] std::span<const std::string_view> credentials() const override {
        return kCredentials;
    }
    [[nodiscard]] std::string_view default_body() const override { return "input"; }

    void normalize(store::TargetSettings& target) const override {
        // Stored, the default routing key is shown by GET like any other setting.
        if (!target.options.contains("routing_key")) {
            target.options["routing_key"] = std::string{kDefaultRoutingKey};
        }
        const auto url = detail::parse_url(target.url);
        if (!url) return;  // check says why
        if (url->user && !url->user->empty() && !target.options.contains("user")) {
            target.options["user"] = *url->user;
        }
        if (url->password) target.credentials["password"] = *url->password;
        target.url = url->url;
    }

    [[nodiscard]] std::optional<FieldProblem> check(const store::TargetSettings& target,
                                                    const HostPolicy& policy) const override {
        if (auto why = detail::url_problem(target.url)) return problem("url", "url " + *why);
        const auto url = detail::parse_url(target.url);
        if (url->user || url->password) {
            return problem("url", "url holds credentials: give them as user and password");
        }
        if (auto why = broker::host_problem({url->host, url->port, url->tls}, policy)) {
            return problem("url", "url " + *why);
        }

        const auto* exchange = option(target, "exchange");
        if (exchange == nullptr) return problem("exchange", "'exchange' is required");
        if (auto why = template_field_problem("exchange", *exchange, exchange_problem)) return why;
        const auto* routing_key = option(target, "routing_key");
        if (auto why = template_field_problem(
                "routing_key", routing_key ? *routing_key : std::string{kDefaultRoutingKey},
                routing_key_problem)) {
            return why;
        }
        if (auto why = broker::settings_problem(target, "AMQP")) return why;
        if (target.ca_file && !url->tls) return problem("ca_file", "ca_file needs an amqps:// url");
        return std::nullopt;
    }

    [[nodiscard]] std::shared_ptr<targets::Channel> open(
        const store::TargetSettings& target, targets::ChannelContext context) const override {
        auto channel = std::make_shared<detail::AmqpChannel>(target, std::move(context));
        channel->start();
        return channel;
    }

    [[nodiscard]] std::string shown_url(std::string_view url) const override {
        const auto parsed = detail::parse_url(url);
        return parsed ? parsed->url : std::string{};
    }
};

}  // namespace

std::optional<std::string> exchange_problem(std::string_view exchange) {
    if (exchange.empty()) return std::string{"is empty"};
    if (exchange.size() > kMaxNameBytes) {
        return "is longer than " + std::to_string(kMaxNameBytes) + " bytes";
    }
    for (const char c : exchange) {
        const bool allowed = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                             (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.' || c == ':';
        if (!allowed)
            return std::string{"holds a byte other than A-Z, a-z, 0-9, '-', '_', '.', ':'"};
    }
    return std::nullopt;
}

std::optional<std::string> routing_key_problem(std::string_view routing_key) {
    if (routing_key.size() > kMaxNameBytes) {
        return "is longer than " + std::to_string(kMaxNameBytes) + " bytes";
    }
    return std::nullopt;
}

const targets::DestinationKind& amqp_kind() {
    static const AmqpKind kind;
    return kind;
}

}  // namespace outboxd::sinks::amqp
