#include "outboxd/sinks/nats/nats_kind.hpp"

#include <array>

#include "nats_channel.hpp"
#include "nats_url.hpp"
#include "outboxd/sinks/broker/broker_rules.hpp"
#include "outboxd/sinks/task_headers.hpp"

namespace outboxd::sinks::nats {

using broker::option;
using broker::path_problem;
using targets::FieldProblem;
using targets::HostPolicy;
namespace {

constexpr std::size_t kMaxSubjectBytes = 1024;

constexpr std::array<targets::OptionSpec, 6> kOptions{
    targets::OptionSpec{"subject"}, targets::OptionSpec{"body"},
    targets::OptionSpec{"user"},    targets::OptionSpec{"creds_file"},
    targets::OptionSpec{"nkey"},    targets::OptionSpec{"nkey_seed_file"}};
constexpr std::array<std::string_view, 2> kCredentials{"password", "token"};

std::optional<FieldProblem> problem(std::string field, std::string message) {
    return FieldProblem{std::move(field), std::move(message)};
}

class NatsKind final : public targets::DestinationKind {
public:
    [[nodiscard]] std::string_view name() const override { return "nats"; }
    [[nodiscard]] std::span<const targets::OptionSpec> options() const override { return kOptions; }
    [[nodiscard]] std::span<const std::string_view> credentials() const override {
        return kCredentials;
    }
    [[nodiscard]] std::string_view default_body() const override { return "input"; }

    void normalize(store::TargetSettings& target) const override {
        if (detail::servers_problem(target.url)) return;  // check says why
        std::string urls;
        for (const auto& server : detail::parse_servers(target.url)) {
            if (server.user && !target.options.contains("user"))
                target.options["user"] = *server.user;
            if (server.password) target.credentials["password"] = *server.password;
            urls += (urls.empty() ? "" : ",") + server.url;
        }
        target.url = urls;
    }

    [[nodiscard]] std::optional<FieldProblem> check(const store::TargetSettings& target,
                                                    const HostPolicy& policy) const override {
        if (auto why = detail::servers_problem(target.url)) return problem("url", "url " + *why);
        for (const auto& server : detail::parse_servers(target.url)) {
            if (server.user || server.password) {
                return problem("url", "url holds credentials: give them as user and password");
            }
            if (auto why = broker::host_problem({server.host, server.port, server.tls}, policy)) {
                return problem("url", "url " + *why);
            }
        }
        const auto* subject = option(target, "subject");
        if (subject == nullptr) return problem("subject", "'subject' is required");
        if (subject->size() > kMaxSubjectBytes) {
            return problem("subject",
                           "subject is longer than " + std::to_string(kMaxSubjectBytes) + " bytes");
        }
        if (auto why = template_problem(*subject)) return problem("subject", "subject: " + *why);
        Task sample;
        sample.namespace_name = sample.task_queue = sample.activity_type = sample.workflow_id = "x";
        if (auto why = subject_problem(expand_template(*subject, sample))) {
            return problem("subject", "subject " + *why);
        }
        if (auto why = broker::settings_problem(target, "NATS")) return why;
        const auto* user = option(target, "user");
        if (target.credentials.contains("token") && user != nullptr) {
            return problem("token", "give a token or a user, not both");
        }
        if (auto why = path_problem(option(target, "creds_file"), "creds_file")) return why;
        if (auto why = path_problem(option(target, "nkey_seed_file"), "nkey_seed_file")) return why;
        if ((option(target, "nkey") == nullptr) != (option(target, "nkey_seed_file") == nullptr)) {
            return problem("nkey", "nkey (the public key) and nkey_seed_file go together");
        }
        return std::nullopt;
    }

    [[nodiscard]] std::shared_ptr<targets::Channel> open(
        const store::TargetSettings& target, targets::ChannelContext context) const override {
        auto channel = std::make_shared<detail::NatsChannel>(target, std::move(context));
        channel->start();
        return channel;
    }

    [[nodiscard]] std::string shown_url(std::string_view url) const override {
        std::string shown;
        for (const auto& server : detail::parse_servers(url)) {
            shown += (shown.empty() ? "" : ",") + server.url;
        }
        return shown;
    }
};

}  // namespace

std::optional<std::string> subject_problem(std::string_view subject) {
    if (subject.empty()) return std::string{"is empty"};
    if (subject.size() > kMaxSubjectBytes) {
        return "is longer than " + std::to_string(kMaxSubjectBytes) + " bytes";
    }
    std::size_t start = 0;
    while (true) {
        const auto dot = subject.find('.', start);
        const auto token = subject.substr(start, dot == std::string_view::npos ? dot : dot - start);
        if (token.empty()) return std::string{"has an empty token"};
        if (token == "*" || token == ">") return std::string{"has a wildcard token"};
        for (const char c : token) {
            const auto byte = static_cast<unsigned char>(c);
            if (byte <= 0x20 || byte == 0x7f)
                return std::string{"holds whitespace or a control byte"};
        }
        if (dot == std::string_view::npos) return std::nullopt;
        start = dot + 1;
    }
}

const targets::DestinationKind& nats_kind() {
    static const NatsKind kind;
    return kind;
}

}  // namespace outboxd::sinks::nats
