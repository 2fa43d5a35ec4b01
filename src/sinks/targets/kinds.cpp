// The kinds of destination this build knows, and the rules every target satisfies.

#include <algorithm>
#include <array>

#include "outboxd/sinks/amqp/amqp_kind.hpp"
#include "outboxd/sinks/http_push/http_kind.hpp"
#include "outboxd/sinks/nats/nats_kind.hpp"
#include "outboxd/sinks/targets/destination.hpp"

namespace outboxd::sinks::targets {
namespace {

std::optional<FieldProblem> problem(std::string field, std::string message) {
    return FieldProblem{std::move(field), std::move(message)};
}

}  // namespace

std::span<const DestinationKind* const> kinds() {
    static const std::array<const DestinationKind*, 3> known{
        &http_push::http_kind(), &nats::nats_kind(), &amqp::amqp_kind()};
    return known;
}

const DestinationKind* find_kind(std::string_view name) {
    for (const auto* kind : kinds()) {
        if (kind->name() == name) return kind;
    }
    return nullptr;
}

std::optional<FieldProblem> check_target(const store::TargetSettings& target,
                                         const HostPolicy& policy) {
    const auto* kind = find_kind(target.kind);
    if (kind == nullptr) {
        std::string known;
        for (const auto* each : kinds()) {
            known += (known.empty() ? "" : ", ") + std::string{each->name()};
        }
        return problem("kind", "kind must be one of " + known);
    }
    if (auto common = http_push::common_target_problem(target)) return common;
    const auto options = kind->options();
    for (const auto& option : target.options) {
        const auto& [name, value] = option;
        const auto spec =
            std::find_if(options.begin(), options.end(),
                         [&option](const OptionSpec& o) { return o.name == option.first; });
        if (spec == options.end()) {
            return problem(name, "'" + name + "' is not a setting of " + std::string{kind->name()} +
                                     " targets");
        }
        if (spec->boolean && value != "true" && value != "false") {
            return problem(name, "'" + name + "' must be true or false");
        }
    }
    const auto credentials = kind->credentials();
    for (const auto& [name, value] : target.credentials) {
        if (std::find(credentials.begin(), credentials.end(), name) == credentials.end()) {
            return problem(name, "'" + name + "' is not a credential of " +
                                     std::string{kind->name()} + " targets");
        }
    }
    return kind->check(target, policy);
}

bool sends_whole_task(const store::TargetSettings& target) {
    if (const auto body = target.options.find("body"); body != target.options.end()) {
        return body->second == "task";
    }
    const auto* kind = find_kind(target.kind);
    return kind == nullptr || kind->default_body() == "task";
}

}  // namespace outboxd::sinks::targets
